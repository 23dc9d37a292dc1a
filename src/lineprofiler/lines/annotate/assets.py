"""The annotated source page's style sheet and script, inlined: the page needs no network.

System fonts only. A file's section is laid out only when it nears the screen
(``content-visibility``, its height estimated from its rows): a page of 20,000 source lines then
opens in about a second rather than ten. The page reads the same without the script; the script only sorts a table
by a click on a column head (cells carry their unformatted values in ``data-v``; an empty one,
"not measured", sorts last).
"""

CSS = """
:root{--fg:#1d2330;--muted:#5b6472;--line:#e3e6ea;--soft:#f5f6f8;--heat:214,72,30}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:#fff}
main{max-width:1400px;margin:0 auto;padding:18px 22px 40px}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:28px 0 6px;padding-bottom:4px;border-bottom:1px solid var(--line);word-break:break-all}
.sub,.note{color:var(--muted);margin:4px 0}
.left-out{color:#8a5a00}
nav{position:sticky;top:0;background:rgba(255,255,255,.95);border-bottom:1px solid var(--line);padding:6px 0;z-index:2;
display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px}
nav a{color:var(--muted);text-decoration:none}
nav a:hover{color:var(--fg)}
div.wide{overflow-x:auto}
section.file{content-visibility:auto}
table{border-collapse:collapse;margin:6px 0 10px;font-variant-numeric:tabular-nums}
th,td{padding:1px 8px;text-align:right;white-space:nowrap;vertical-align:top}
th{font-size:12px;color:var(--muted);font-weight:600;background:var(--soft);border-bottom:1px solid var(--line)}
td.name{text-align:left;max-width:480px;overflow:hidden;text-overflow:ellipsis}
td.src,th:last-child{text-align:left}
table[data-block=functions] th:nth-child(-n+2),table[data-block=slowest] th:nth-child(n+4),
table[data-block=left-out] th:first-child{text-align:left}
td.src{font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;white-space:pre}
td.na,td.in,.cut{color:var(--muted);font-style:italic}
table.code td{border-bottom:0;font-size:12px}
table.code td:first-child{color:var(--muted)}
tr.u td{color:#9aa1ab}
tr.gap td{text-align:left;color:var(--muted);background:var(--soft);font-size:12px}
tr[id]{scroll-margin-top:48px}
tr:target{outline:2px solid #3b6fd8;outline-offset:-1px}
.h1{background:rgba(var(--heat),.05)}.h2{background:rgba(var(--heat),.09)}.h3{background:rgba(var(--heat),.13)}
.h4{background:rgba(var(--heat),.17)}.h5{background:rgba(var(--heat),.22)}.h6{background:rgba(var(--heat),.27)}
.h7{background:rgba(var(--heat),.33)}.h8{background:rgba(var(--heat),.39)}.h9{background:rgba(var(--heat),.46)}
.h10{background:rgba(var(--heat),.54)}
.js th[data-sort]{cursor:pointer}
th[aria-sort=ascending]:after{content:" \\2191"}
th[aria-sort=descending]:after{content:" \\2193"}
pre.text{background:var(--soft);padding:10px;overflow:auto;font-size:12px}
footer{margin-top:30px;color:var(--muted);font-size:12px}
"""

JS = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  function key(row, col) {
    var cell = row.cells[col];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    if (v === "") { return -Infinity; }
    if (v !== null) { var n = parseFloat(v); if (!isNaN(n)) { return n; } }
    return cell.textContent.trim().toLowerCase();
  }
  function sortBy(th) {
    var body = th.closest("table").tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.cells, th);
    var descending = th.getAttribute("aria-sort") !== "descending";
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var ka = key(a, col), kb = key(b, col);
      if (ka === kb) { return 0; }
      var less = (typeof ka === typeof kb) ? ka < kb : typeof ka === "number";
      return (less ? -1 : 1) * (descending ? -1 : 1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("th[data-sort]"), function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });
})();
"""

__all__ = ["CSS", "JS"]
