'use strict';
// report.html's tables: a click on a column's heading sorts the rows by it (numbers largest
// first, names in alphabetical order; a second click reverses). Each cell's data-value holds
// the exact figure the sort uses.
(function () {
  function sortBy(table, index) {
    const heading = table.tHead.rows[0].cells[index];
    const numeric = heading.dataset.sort === 'number';
    const current = heading.getAttribute('aria-sort');
    const descending = current ? current === 'ascending' : numeric;
    for (const th of table.tHead.rows[0].cells) th.removeAttribute('aria-sort');
    heading.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
    const key = (row) => {
      const cell = row.cells[index];
      const text = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent;
      return numeric ? Number(text) : text.toLowerCase();
    };
    const body = table.tBodies[0];
    const rows = [...body.rows];
    rows.sort((a, b) => {
      const x = key(a);
      const y = key(b);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    for (const row of rows) body.appendChild(row);
  }
  for (const table of document.querySelectorAll('table.sortable')) {
    [...table.tHead.rows[0].cells].forEach((th, index) => {
      th.addEventListener('click', () => sortBy(table, index));
    });
  }
})();
