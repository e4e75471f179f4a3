// shieldbench report: filter the example tables. No network, no eval, no innerHTML:
// row text is only ever read (textContent), never written back as markup.
(function () {
  "use strict";
  function apply(tableId) {
    var table = document.getElementById(tableId);
    if (!table || !table.tBodies.length) { return; }
    var query = "";
    var wanted = {};
    document.querySelectorAll("[data-filter-for]").forEach(function (control) {
      if (control.getAttribute("data-filter-for") !== tableId) { return; }
      if (control.tagName === "INPUT") {
        query = control.value.trim().toLowerCase();
      } else if (control.value) {
        wanted[control.getAttribute("data-filter-key")] = control.value;
      }
    });
    var rows = table.tBodies[0].rows;
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var ok = !query || row.textContent.toLowerCase().indexOf(query) !== -1;
      Object.keys(wanted).forEach(function (key) {
        if (row.getAttribute("data-" + key) !== wanted[key]) { ok = false; }
      });
      row.hidden = !ok;
      if (ok) { shown++; }
    }
    var counter = document.getElementById(tableId + "-count");
    if (counter) { counter.textContent = shown + " of " + rows.length + " shown"; }
  }
  document.querySelectorAll("[data-filter-for]").forEach(function (control) {
    var tableId = control.getAttribute("data-filter-for");
    control.addEventListener("input", function () { apply(tableId); });
    control.addEventListener("change", function () { apply(tableId); });
    apply(tableId);
  });
  // Copy buttons next to shortened hashes and ids: the full value is in data-copy
  // (and in the title); it is only ever passed to the clipboard as text.
  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var value = button.getAttribute("data-copy") || "";
      var done = function () { button.classList.add("done"); button.textContent = "copied"; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(value).then(done, function () {});
      }
    });
  });
  document.documentElement.setAttribute("data-report-script", "ran");
})();
