// Sort a table by a clicked header, filter its rows by a text box, and open a row's trial page.
(function () {
  function cellValue(row, index) {
    var cell = row.cells[index];
    var text = cell ? (cell.getAttribute("data-sort") || cell.textContent).trim() : "";
    var num = parseFloat(text);
    return isNaN(num) || !/^-?[0-9.]/.test(text) ? text.toLowerCase() : num;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach(function (th, index) {
      th.addEventListener("click", function () {
        var up = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, index), y = cellValue(b, index);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll("input.filter").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    var count = document.getElementById(input.getAttribute("data-count"));
    input.addEventListener("input", function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = row.textContent.toLowerCase();
        var keep = words.every(function (w) { return text.indexOf(w) !== -1; });
        row.hidden = !keep;
        if (keep) { shown += 1; }
      });
      count.textContent = shown + " shown";
    });
  });
  document.querySelectorAll("tr.link").forEach(function (row) {
    row.addEventListener("click", function (event) {
      if (event.target.closest("a")) { return; }
      window.location.href = row.getAttribute("data-href");
    });
  });
})();
