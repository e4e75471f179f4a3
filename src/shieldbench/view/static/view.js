// shieldbench view: the one packaged script (the CSP allows no inline script).
// Progressive enhancement only: every page works without it.
"use strict";
(function () {
  document.documentElement.dataset.viewScript = "ran";
  // A changed select in a filter form applies at once (the button still works).
  document.querySelectorAll("form.filters select").forEach(function (select) {
    select.addEventListener("change", function () {
      var page = select.form.querySelector("input[name=page]");
      if (page) { page.remove(); }
      select.form.submit();
    });
  });
  // Compare needs two or more runs: say so instead of sending one.
  var compare = document.getElementById("compare-form");
  if (compare) {
    compare.addEventListener("submit", function (event) {
      if (compare.querySelectorAll("input[name=run]:checked").length < 2) {
        event.preventDefault();
        var note = compare.querySelector(".muted");
        if (note) { note.textContent = "(select two or more runs of the same data first)"; }
      }
    });
  }
})();
