"""Remote defenses: a guard behind a network endpoint.

- ``_http``: ``http:``, any REST guard API with a response-to-verdict mapping.
- ``_llm``, ``_llm_parse``: ``llm:`` / ``openai:``, an LLM as a classifier, its
  prompt and the parsing of its answer.
- ``_net``: what both share (secrets, retries, rate limits); ``_clients``: the HTTP
  clients (httpx for ``check``, aiohttp for ``acheck``).
"""
