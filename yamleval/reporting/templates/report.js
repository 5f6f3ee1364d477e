(function () {
  "use strict";
  // Every value from the data blob reaches the page through textContent or DOM nodes, never as markup.
  var DATA = JSON.parse(document.getElementById("data").textContent);
  var F = {};
  DATA.fields.forEach(function (name, n) { F[name] = n; });

  // A page that yamleval serve serves reads its rows from the server (served.js, run first); the
  // report alone has them in the page.
  var SERVED = window.YAMLEVAL_SERVED || null;

  // Each experiment's rows come as chunks: gzip in base64, inflated by the browser's own
  // DecompressionStream (nothing is fetched: a Blob is read in memory), one chunk at a time
  // once its table is built, the page answering in between: the first rows show at once, the
  // others join them when all are read.
  function inflate(chunk) {
    var text = atob(chunk), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  // The page's own chunks, one by one: {rows, more} each, then null.
  function chunksOf(exp) {
    var chunks = exp.chunks, at = 0;
    return function () {
      if (at === chunks.length) return Promise.resolve(null);
      return inflate(chunks[at++]).then(function (rows) { return { rows: rows, more: at < chunks.length }; });
    };
  }
  // Reads the experiment's rows into exp.items, calling grew(false) after the first, grew(true) at the end.
  function load(exp, grew, number) {
    var next = SERVED && !exp.chunks.length ? SERVED.source(number, exp) : chunksOf(exp), first = true;
    exp.items = [];
    exp.chunks = null;
    function step() {
      return next().then(function (got) {
        if (!got) { grew(true); return; }
        // an output equal to the expected text comes as 0: share the expected string
        var rows = got.rows;
        for (var i = 0; i < rows.length; i++) {
          if (rows[i][F.output] === 0) rows[i][F.output] = rows[i][F.expected];
          exp.items.push(rows[i]);
        }
        if (!got.more) { grew(true); return; }
        if (first) { first = false; grew(false); }  // the first rows; the rest in one go, when all are read
        return new Promise(function (resolve) { setTimeout(resolve, 0); }).then(step);
      });
    }
    return step();
  }
  var STATUSES = ["passed", "failed", "error", "skipped"];
  var VERDICT = { passed: "pass", failed: "fail", error: "error", skipped: "skipped" };
  var RANK = { error: 0, failed: 1, skipped: 2, passed: 3 };
  var CLIP = 240;         // characters shown in a truncated cell
  var DIFF_CELLS = 4e6;   // largest word-by-word table the diff will fill
  var tables = [];

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }
  function clip(text) { return text.length > CLIP ? text.slice(0, CLIP) + "…" : text; }
  function fmt(n) { return n.toLocaleString("en-US"); }
  // Two decimals, or as many more as it takes to fall on the score's side of its threshold:
  // 0.9968 under 0.999 reads 0.997, not 1.00 (as the text reports' ``below``).
  function fmtScore(v, threshold) {
    if (v === null) return "—";
    var text = v.toFixed(2);
    for (var digits = 3; threshold !== null && threshold !== undefined && digits < 10
         && (+text >= threshold) !== (v >= threshold); digits++) text = v.toFixed(digits);
    return text;
  }
  // a duration in milliseconds as yamleval.analysis.figures.ms writes it: 0.40 ms, 12.5 ms, 340 ms, 1.2 s
  function fmtDuration(v) {
    if (v === null) return "—";
    if (v >= 999.5) return (v / 1000).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 }) + " s";
    return v.toFixed(v >= 99.95 ? 0 : v >= 1 ? 1 : 2) + " ms";
  }

  // ---- word-level diff of expected against output ------------------------------------------
  // A token is a word, a punctuation mark or a run of spaces: a word matches itself wherever
  // it stands, at the end of a text too; the cleanup below folds lone spaces between changes.
  var WORDS = /[\p{L}\p{N}_]+/gu;
  function tokens(text) { return text.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]|\s+/gu) || []; }
  function wordCount(text) { return (text.match(WORDS) || []).length; }

  // Runs of ["=", text] and changes {del, ins}, from a longest common subsequence of tokens.
  function diffTokens(a, b) {
    var start = 0, endA = a.length, endB = b.length, ops = [];
    while (start < endA && start < endB && a[start] === b[start]) start++;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
    if (start > 0) push(ops, "=", a.slice(0, start).join(""));
    var n = endA - start, m = endB - start, tooLarge = n * m > DIFF_CELLS;
    if (tooLarge) {
      push(ops, "-", a.slice(start, endA).join(""));
      push(ops, "+", b.slice(start, endB).join(""));
    } else if (n || m) {
      var width = m + 1, table = new Uint32Array((n + 1) * width), i, j;
      for (i = n - 1; i >= 0; i--) {
        for (j = m - 1; j >= 0; j--) {
          table[i * width + j] = a[start + i] === b[start + j] ? table[(i + 1) * width + j + 1] + 1
            : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
        }
      }
      i = 0; j = 0;
      while (i < n || j < m) {
        if (i < n && j < m && a[start + i] === b[start + j]) { push(ops, "=", a[start + i]); i++; j++; }
        else if (i < n && (j === m || table[(i + 1) * width + j] >= table[i * width + j + 1])) { push(ops, "-", a[start + i]); i++; }
        else { push(ops, "+", b[start + j]); j++; }
      }
    }
    if (endA < a.length) push(ops, "=", a.slice(endA).join(""));
    var blocks = cleanup(ops);
    blocks.tooLarge = tooLarge;
    return blocks;
  }
  function push(ops, kind, text) {
    var last = ops[ops.length - 1];
    if (last && last[0] === kind) last[1] += text; else ops.push([kind, text]);
  }
  // Fold an unchanged stretch that is no longer than the changes on both sides of it into
  // them: two paraphrases then read as one replacement, not a patchwork of shared words.
  function cleanup(ops) {
    var blocks = [], k, last;
    for (k = 0; k < ops.length; k++) {
      last = blocks[blocks.length - 1];
      if (ops[k][0] === "=") { blocks.push({ eq: ops[k][1] }); continue; }
      if (!last || last.eq !== undefined) { last = { del: "", ins: "" }; blocks.push(last); }
      if (ops[k][0] === "-") last.del += ops[k][1]; else last.ins += ops[k][1];
    }
    var out = [];
    for (k = 0; k < blocks.length; k++) {
      var block = blocks[k], prev = out[out.length - 1], next = blocks[k + 1];
      if (block.eq !== undefined && prev && prev.eq === undefined && next
          && block.eq.length <= Math.max(prev.del.length, prev.ins.length)
          && block.eq.length <= Math.max(next.del.length, next.ins.length)) {
        prev.del += block.eq + next.del;
        prev.ins += block.eq + next.ins;
        k++;
      } else out.push(block);
    }
    return out;
  }

  function renderDiff(expected, output) {
    var box = el("div");
    if (expected === null) { box.appendChild(el("pre", "nil", "No expected value to compare with.")); return box; }
    if (output === null) { box.appendChild(el("pre", "nil", "No output to compare.")); return box; }
    var blocks = diffTokens(tokens(expected), tokens(output));
    var pre = el("pre", "diff"), added = 0, removed = 0;
    blocks.forEach(function (block) {
      if (block.eq !== undefined) { pre.appendChild(document.createTextNode(block.eq)); return; }
      if (block.del) { pre.appendChild(el("del", null, block.del)); removed += wordCount(block.del); }
      // a word replaced by a word reads as two words, not one run together: a space between them
      if (/[\p{L}\p{N}_]$/u.test(block.del) && /^[\p{L}\p{N}_]/u.test(block.ins)) pre.appendChild(document.createTextNode(" "));
      if (block.ins) { pre.appendChild(el("ins", null, block.ins)); added += wordCount(block.ins); }
    });
    box.appendChild(pre);
    var legend = el("p", "diff-legend");
    legend.appendChild(el("del", null, "expected only"));
    legend.appendChild(document.createTextNode(" "));
    legend.appendChild(el("ins", null, "output only"));
    var changed = blocks.some(function (block) { return block.eq === undefined; });
    legend.appendChild(document.createTextNode(!changed ? "  output equals expected"
      : "  " + fmt(removed) + " word" + (removed === 1 ? "" : "s") + " removed, " + fmt(added) + " added"
        + (blocks.tooLarge ? " (texts too long and different for a word-by-word diff)" : "")));
    box.appendChild(legend);
    return box;
  }

  // ---- one experiment's item table -----------------------------------------------------------
  function Table(section, exp) {
    this.section = section;
    this.id = section.getAttribute("data-id");
    this.items = exp.items;
    this.slice = null;       // [breakdown, value] whose items alone are shown, or null
    this.count = exp.count;  // items in all, this.items holding those read so far
    this.loading = true;
    this.scorers = exp.scorers;
    this.thresholds = exp.thresholds;  // of each scorer, or null
    this.tbody = section.querySelector(".items-table tbody");
    // keep the three text columns readable however many scorer columns there are (scrolls sideways)
    var table = section.querySelector(".items-table"), scroller = table.parentNode;
    table.style.minWidth = (920 + 124 * this.scorers.length) + "px";
    // an opened item stays within the visible part of a table wider than its box (CSS: .detail-grid)
    function fit() { section.style.setProperty("--detail-width", Math.max(260, scroller.clientWidth - 34) + "px"); }
    fit();
    window.addEventListener("resize", fit);
    this.columns = section.querySelectorAll(".items-table thead th").length;
    // each cell's column name, shown beside it where rows are laid out as cards (a phone)
    this.labels = Array.prototype.map.call(section.querySelectorAll(".items-table thead th"),
                                           function (th) { return th.textContent.trim(); });
    this.search = section.querySelector("input.search");
    this.showing = section.querySelector(".showing");
    this.pageOf = section.querySelector(".page-of");
    this.shown = { passed: true, failed: true, error: true, skipped: true };
    this.onlyFlaky = false;  // only the items whose repeats disagree
    this.query = "";
    this.mask = null;        // Uint8Array of items matching the search, null when there is none
    this.sortKey = "index";
    this.sortDir = 1;
    this.order = null;       // every item index in the current sort order
    this.view = [];          // indices that pass search and status filter, in order
    this.page = 0;
    this.pageSize = 100;
    this.open = new Set();   // expanded item indices
    this.bind();
    // a reload may bring back the form's earlier state: start from what the controls show
    this.pageSize = parseInt(section.querySelector(".pager select").value, 10) || 100;
    if (this.search.value.trim()) this.setQuery(this.search.value); else this.refresh();
  }

  Table.prototype.bind = function () {
    var self = this, timer = null;
    this.section.querySelectorAll("input[data-status]").forEach(function (box) {
      self.shown[box.getAttribute("data-status")] = box.checked;
      box.addEventListener("change", function () {
        self.shown[box.getAttribute("data-status")] = box.checked;
        self.page = 0;
        self.refresh();
      });
    });
    this.section.querySelectorAll("input[data-only=flaky]").forEach(function (box) {
      self.onlyFlaky = box.checked;
      box.addEventListener("change", function () { self.onlyFlaky = box.checked; self.page = 0; self.refresh(); });
    });
    this.search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { self.setQuery(self.search.value); }, self.items.length > 20000 ? 250 : 60);
    });
    this.search.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { clearTimeout(timer); self.setQuery(self.search.value); }
      if (event.key === "Escape" && self.search.value) { self.search.value = ""; self.setQuery(""); }
    });
    this.section.querySelectorAll(".items-table th[data-sort] button").forEach(function (button) {
      button.addEventListener("click", function () { self.sortBy(button.parentNode.getAttribute("data-sort")); });
    });
    this.section.querySelectorAll(".pager button").forEach(function (button) {
      button.addEventListener("click", function () { self.goTo(button.getAttribute("data-page")); });
    });
    this.section.querySelector(".pager select").addEventListener("change", function (event) {
      var first = self.page * self.pageSize;
      self.pageSize = parseInt(event.target.value, 10);
      self.page = Math.floor(first / self.pageSize);
      self.render();
    });
    this.tbody.addEventListener("click", function (event) {
      var row = event.target.closest("tr.row");
      if (row && !String(window.getSelection())) self.toggle(row);  // not when selecting text
    });
    this.tbody.addEventListener("keydown", function (event) { self.onKey(event); });
    this.section.querySelectorAll(".breakdown button.slice").forEach(function (button) {
      button.addEventListener("click", function () {
        var k = +button.closest(".breakdown").getAttribute("data-breakdown"), j = +button.getAttribute("data-slice");
        self.setSlice(self.slice && self.slice[0] === k && self.slice[1] === j ? null : [k, j], button);
      });
    });
    this.section.querySelector(".slice-clear").addEventListener("click", function () { self.setSlice(null); });
    this.section.querySelectorAll("button[data-export]").forEach(function (button) {
      button.addEventListener("click", function () { self.download(button.getAttribute("data-export")); });
    });
  };

  // Only the items with one value of a breakdown's field (null: all of them).
  Table.prototype.setSlice = function (slice, button) {
    this.slice = slice;
    this.section.querySelectorAll(".breakdown button.slice").forEach(function (other) {
      other.setAttribute("aria-pressed", other === button && slice ? "true" : "false");
    });
    var bar = this.section.querySelector(".slice-filter");
    bar.hidden = !slice;
    if (slice) {
      var field = button.closest(".breakdown").querySelector(".section-title .mono").textContent;
      bar.querySelector(".slice-name").textContent = field + " = " + button.textContent;
    }
    this.page = 0;
    this.refresh();
  };
  function inSlice(it, slice) {
    var values = it[F.slices];
    return values !== null && values !== undefined && values[slice[0]].indexOf(slice[1]) >= 0;
  }

  // ---- exports: the items shown (filters, search, breakdown value) in dataset order ----------
  // The columns and number forms of `yamleval export`, so that both give the same file.
  Table.prototype.exportRows = function () {
    var self = this, indices = this.view.slice().sort(function (a, b) { return a - b; });
    return indices.map(function (i) {
      var it = self.items[i], scores = {};
      self.scorers.forEach(function (sid, k) { scores[sid] = it[F.scores][k] ? it[F.scores][k][0] : null; });
      return { experiment: self.id, id: it[F.id], status: it[F.status], input: it[F.input], output: it[F.output],
               expected: it[F.expected], error: it[F.error], latency_ms: it[F.latency_ms], tokens: it[F.tokens],
               scores: scores };
    });
  };
  function csvCell(value) {  // as yamleval export writes a cell: no text runs as a spreadsheet formula
    if (value === null || value === undefined) return "";
    var text = String(value);
    if (typeof value === "string" && /^[=+\-@\t\r]/.test(text) && !/^[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(text)) {
      text = "'" + text;
    }
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  Table.prototype.exportText = function (format) {
    var rows = this.exportRows(), scorers = this.scorers;
    if (format === "jsonl") return rows.map(function (row) { return JSON.stringify(row) + "\n"; }).join("");
    var head = ["experiment", "id", "status", "input", "output", "expected", "error", "latency_ms", "tokens"];
    var lines = [head.concat(scorers.map(function (sid) { return sid + " score"; })).map(csvCell).join(",")];
    rows.forEach(function (row) {
      lines.push(head.map(function (name) { return row[name]; })
        .concat(scorers.map(function (sid) { return row.scores[sid]; })).map(csvCell).join(","));
    });
    return lines.join("\r\n") + "\r\n";
  };
  Table.prototype.download = function (format) {
    var blob = new Blob([this.exportText(format)], { type: format === "csv" ? "text/csv" : "application/x-ndjson" });
    var link = el("a");
    link.href = URL.createObjectURL(blob);
    link.download = this.id + "-items." + format;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(link.href); }, 0);
  };

  Table.prototype.onKey = function (event) {
    var row = event.target.closest("tr.row, tr.detail");
    if (!row) return;
    if (row.classList.contains("detail")) {
      if (event.key === "Escape") { var owner = row.previousSibling; this.toggle(owner); owner.focus(); event.preventDefault(); }
      return;
    }
    if (event.target !== row) return;
    var key = event.key;
    if (key === "Enter" || key === " ") { this.toggle(row); event.preventDefault(); }
    else if (key === "Escape" && row.getAttribute("aria-expanded") === "true") { this.toggle(row); event.preventDefault(); }
    else if (key === "ArrowDown" || key === "j") { focusRow(row, 1); event.preventDefault(); }
    else if (key === "ArrowUp" || key === "k") { focusRow(row, -1); event.preventDefault(); }
  };

  function focusRow(row, step, cls) {  // the next (or previous) row of class ``cls`` (default: "row")
    var next = step > 0 ? row.nextElementSibling : row.previousElementSibling;
    while (next && !next.classList.contains(cls || "row")) next = step > 0 ? next.nextElementSibling : next.previousElementSibling;
    if (next) next.focus();
  }

  Table.prototype.setQuery = function (text) {
    var query = text.trim();
    if (query === this.query) return;
    this.query = query;
    this.page = 0;
    this.match();
    this.refresh();
  };

  // More items have been read (all of them once ``done``): the view takes them in.
  Table.prototype.grew = function (done) {
    this.loading = !done;
    this.order = null;
    this.match();
    this.refresh();
  };

  Table.prototype.match = function () {
    var query = this.query;
    if (!query) { this.mask = null; return; }
    var pattern = new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
    var items = this.items, mask = new Uint8Array(items.length), f = F;
    for (var i = 0; i < items.length; i++) {
      var it = items[i];
      if (matches(pattern, it[f.id]) || matches(pattern, it[f.input]) || matches(pattern, it[f.output])
          || matches(pattern, it[f.expected]) || matches(pattern, it[f.error]) || matches(pattern, it[f.label])
          || reasonsMatch(pattern, it[f.scores])) mask[i] = 1;
    }
    this.mask = mask;
  };
  function matches(pattern, text) { return text !== null && text !== undefined && pattern.test(text); }
  function reasonsMatch(pattern, scores) {
    for (var k = 0; k < scores.length; k++) if (scores[k] && matches(pattern, scores[k][2])) return true;
    return false;
  }

  Table.prototype.sortBy = function (key) {
    if (this.sortKey === key) this.sortDir = -this.sortDir;
    else { this.sortKey = key; this.sortDir = key === "latency" || key === "tokens" ? -1 : 1; }
    this.order = null;
    this.page = 0;
    var self = this;
    this.section.querySelectorAll(".items-table th[data-sort]").forEach(function (th) {
      th.setAttribute("aria-sort", th.getAttribute("data-sort") !== self.sortKey ? "none"
        : self.sortDir > 0 ? "ascending" : "descending");
    });
    this.refresh();
  };

  Table.prototype.sortedOrder = function () {
    if (this.order) return this.order;
    var n = this.items.length, order = new Array(n), i;
    for (i = 0; i < n; i++) order[i] = i;
    if (this.sortKey === "index") {
      if (this.sortDir < 0) order.reverse();
      return (this.order = order);
    }
    var values = new Array(n), items = this.items, key = this.sortKey, dir = this.sortDir;
    for (i = 0; i < n; i++) values[i] = sortValue(items[i], key);
    order.sort(function (a, b) {
      var x = values[a], y = values[b];
      if (x === y) return a - b;
      if (x === null) return 1;     // missing values last, whichever the direction
      if (y === null) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    return (this.order = order);
  };

  function sortValue(it, key) {
    if (key === "status") return RANK[it[F.status]];
    if (key === "latency") return it[F.latency_ms];
    if (key === "tokens") return it[F.tokens];
    if (key.indexOf("score:") === 0) {
      var score = it[F.scores][+key.slice(6)];
      return score ? score[0] : null;
    }
    if (key === "output" && it[F.output] === null) return it[F.error];
    return it[F[key]];
  }

  Table.prototype.refresh = function () {
    var order = this.sortedOrder(), items = this.items, mask = this.mask, shown = this.shown, f = F.status;
    var view = [], counts = { passed: 0, failed: 0, error: 0, skipped: 0 }, slice = this.slice, flaky = this.onlyFlaky;
    for (var k = 0; k < order.length; k++) {
      var i = order[k];
      if (mask !== null && !mask[i]) continue;
      if (slice !== null && !inSlice(items[i], slice)) continue;
      if (flaky && !items[i][F.flaky]) continue;
      var status = items[i][f];
      counts[status]++;
      if (shown[status]) view.push(i);
    }
    this.view = view;
    // while the items are read, the counts of the whole run (in the page) stand unless a search or value narrows them
    if (!this.loading || mask !== null || slice !== null || flaky) {
      this.section.querySelectorAll("[data-count]").forEach(function (node) {
        node.textContent = fmt(counts[node.getAttribute("data-count")]);
      });
    }
    this.render();
  };

  Table.prototype.pages = function () { return Math.max(1, Math.ceil(this.view.length / this.pageSize)); };

  Table.prototype.goTo = function (where) {
    var last = this.pages() - 1;
    this.page = where === "first" ? 0 : where === "last" ? last
      : Math.min(last, Math.max(0, this.page + (where === "next" ? 1 : -1)));
    this.render();
    var first = this.tbody.querySelector("tr.row");
    if (first && this.section.contains(document.activeElement) && document.activeElement.tagName !== "BUTTON") first.focus();
  };

  Table.prototype.render = function () {
    var view = this.view, total = this.items.length, pages = this.pages();
    if (this.page >= pages) this.page = pages - 1;
    var from = this.page * this.pageSize, to = Math.min(view.length, from + this.pageSize);
    var fragment = document.createDocumentFragment();
    for (var k = from; k < to; k++) {
      var i = view[k], row = this.row(i);
      fragment.appendChild(row);
      if (this.open.has(i)) fragment.appendChild(this.detail(i));
    }
    if (!view.length) {
      var empty = el("tr"), cell = el("td", "empty", total ? "No items match the filters." : "This experiment has no items.");
      cell.colSpan = this.columns;
      empty.appendChild(cell);
      fragment.appendChild(empty);
    }
    this.tbody.replaceChildren(fragment);
    var filtered = view.length !== total;
    filtered = filtered || this.slice !== null || this.onlyFlaky;
    this.showing.textContent = view.length
      ? "Showing " + fmt(from + 1) + "–" + fmt(to) + " of " + fmt(view.length) + (filtered ? " matching " + (view.length === 1 ? "item" : "items") + " (" + fmt(total) + " in total)" : view.length === 1 ? " item" : " items")
      : "No matching items (" + fmt(total) + " in total)";
    if (this.loading) this.showing.textContent += " · reading the items: " + fmt(total) + " of " + fmt(this.count);
    this.pageOf.textContent = "Page " + fmt(this.page + 1) + " of " + fmt(pages);
    var buttons = this.section.querySelectorAll(".pager button");
    buttons[0].disabled = buttons[1].disabled = this.page === 0;
    buttons[2].disabled = buttons[3].disabled = this.page >= pages - 1;
  };

  function textCell(text, cls) {
    var td = el("td", cls);
    if (text === null || text === undefined) { td.appendChild(el("span", "nil", "—")); return td; }
    td.textContent = clip(text);
    return td;
  }

  Table.prototype.row = function (i) {
    var it = this.items[i], tr = el("tr", "row");
    tr.tabIndex = 0;
    tr.setAttribute("data-index", String(i));
    tr.setAttribute("aria-expanded", this.open.has(i) ? "true" : "false");
    var id = el("td", "item-id", it[F.id]);
    id.title = it[F.id];  // in full where the column cuts it
    tr.appendChild(id);
    tr.appendChild(textCell(it[F.input]));
    var verdict = el("td");
    verdict.appendChild(el("span", "pill pill-" + VERDICT[it[F.status]], VERDICT[it[F.status]]));
    if (it[F.flaky]) {
      var flaky = el("span", "pill pill-warn flaky", "flaky");
      flaky.title = "its repeats disagree: some passed, some failed";
      verdict.appendChild(flaky);
    }
    var human = it[F.human];
    if (human) {
      var mark = el("span", "pill " + (human[0] === human[1] ? "pill-none" : "pill-warn") + " reviewed", "person");
      mark.title = "a person's verdict counts: " + human[0] + "; its scorers': " + human[1];
      verdict.appendChild(mark);
    }
    (it[F.notes] || []).forEach(function (note) { verdict.appendChild(el("span", "note", clip(note))); });
    tr.appendChild(verdict);
    if (it[F.output] === null && it[F.error] !== null) tr.appendChild(textCell(it[F.error], "err"));
    else tr.appendChild(textCell(it[F.output]));
    tr.appendChild(textCell(it[F.expected]));
    var scores = it[F.scores];
    for (var k = 0; k < this.scorers.length; k++) tr.appendChild(scoreCell(scores[k], this.thresholds[k]));
    tr.appendChild(el("td", "num", fmtDuration(it[F.latency_ms])));
    tr.appendChild(it[F.tokens] === null ? textCell(null, "num") : el("td", "num", fmt(it[F.tokens])));
    for (var c = 0; c < tr.children.length && c < this.labels.length; c++) tr.children[c].setAttribute("data-label", this.labels[c]);
    return tr;
  };

  function scorePill(score, threshold) {
    var verdict = score[1], cls = verdict === "" ? "none" : verdict === "skipped" ? "skipped" : verdict;
    var label = verdict === "error" ? "error" : verdict === "skipped" ? "skipped"
      : fmtScore(score[0], threshold) + (verdict === "pass" ? " ✓" : verdict === "fail" ? " ✗" : "");
    var pill = el("span", "pill pill-" + cls, label);
    if (verdict === "pass" || verdict === "fail") pill.title = verdict;
    return pill;
  }

  function scoreCell(score, threshold) {
    var td = el("td", "score");
    if (!score) { td.appendChild(el("span", "nil", "—")); return td; }
    td.appendChild(scorePill(score, threshold));
    if (score[2]) td.appendChild(el("span", "why", clip(score[2])));
    return td;
  }

  Table.prototype.toggle = function (row) {
    var i = +row.getAttribute("data-index");
    if (this.open.has(i)) {
      this.open.delete(i);
      var next = row.nextElementSibling;
      if (next && next.classList.contains("detail")) next.remove();
      row.setAttribute("aria-expanded", "false");
    } else {
      this.open.add(i);
      row.after(this.detail(i));
      row.setAttribute("aria-expanded", "true");
    }
  };

  function block(title, text, cls) {
    var box = el("section", cls);
    box.appendChild(el("h4", null, title));
    box.appendChild(text === null || text === undefined ? el("pre", "nil", "none") : el("pre", null, text));
    return box;
  }

  Table.prototype.detail = function (i) {
    var it = this.items[i], tr = el("tr", "detail"), td = el("td"), grid = el("div", "detail-grid");
    td.colSpan = this.columns;
    var meta = el("div", "detail-meta wide");
    [["Item", it[F.id]], ["Label", it[F.label]], ["Verdict", VERDICT[it[F.status]]],
     ["Latency", fmtDuration(it[F.latency_ms])], ["Tokens", it[F.tokens] === null ? "—" : fmt(it[F.tokens])]]
      .forEach(function (pair) {
        if (pair[1] === null || pair[1] === undefined) return;
        var span = el("span", null, pair[0] + " ");
        span.appendChild(el("b", null, pair[1]));
        meta.appendChild(span);
      });
    if (SERVED && !SERVED.item) meta.appendChild(SERVED.itemLink(this.id, it[F.id]));
    grid.appendChild(meta);
    if (it[F.human]) grid.appendChild(humanBlock(it[F.human]));
    if (SERVED && SERVED.review) {
      var self = this;
      grid.appendChild(SERVED.review(this.id, it[F.id], it[F.status], function (item) {  // as it counts now
        it[F.status] = item.status;
        it[F.human] = item.human;
        self.refresh();
      }));
    }
    grid.appendChild(block("Input", it[F.input]));
    grid.appendChild(block("Expected", it[F.expected]));
    grid.appendChild(block("Output", it[F.output]));
    if (it[F.assertions]) grid.appendChild(assertions(it[F.assertions]));
    if (it[F.error] !== null) grid.appendChild(block("Error", it[F.error], "wide"));
    if (it[F.notes]) grid.appendChild(block("Notes", it[F.notes].join("\n"), "wide"));
    var diff = el("section", "wide");
    diff.appendChild(el("h4", null, "Diff: expected → output (by word)"));
    diff.appendChild(renderDiff(it[F.expected], it[F.output]));
    grid.appendChild(diff);
    if (this.scorers.length) grid.appendChild(this.scoreTable(it[F.scores]));
    if (it[F.repeats]) grid.appendChild(this.repeatTable(it[F.repeats]));
    if (it[F.metadata] !== null) grid.appendChild(block("Metadata", it[F.metadata], "wide"));
    if (it[F.trajectory]) grid.appendChild(trajectory(it[F.trajectory]));
    td.appendChild(grid);
    tr.appendChild(td);
    return tr;
  };

  // Which verdict counts: a person's (its review, or its dataset's label) over its scorers'.
  function humanBlock(human) {
    var who = human[2] === "dataset" ? "the dataset's label" : (human[3] || "a person") + (human[4] ? ", " + human[4] : "");
    var text = "Counts: " + human[0] + ", by " + who + ".\nIts scorers: " + human[1] + "."
      + (human[6] > 1 ? "\nReviews of this item: " + human[6] + " (the newest counts)." : "")
      + (human[5] ? "\nNote: " + human[5] : "");
    return block("Person's verdict", text, "wide");
  }

  // What the item's dataset row requires of the answer (judges grade against it).
  function assertions(texts) {
    var box = el("section", "wide assertions"), list = el("ul");
    box.appendChild(el("h4", null, "Assertions"));
    texts.forEach(function (text) { list.appendChild(el("li", null, text === null ? "—" : text)); });
    box.appendChild(list);
    return box;
  }

  function plural(n, word) { return fmt(n) + " " + word + (n === 1 ? "" : "s"); }

  // The runner's trajectory, collapsed until opened: [steps counted, tool calls, steps], each
  // step [number, label, latency, tokens, text, error, calls] (unnumbered: a message or an
  // event between the steps), each call [name, arguments, result, error, latency].
  function trajectory(t) {
    var box = el("details", "wide trajectory"), list = el("ol", "steps");
    box.appendChild(el("summary", null, "Trajectory · " + plural(t[0], "step") + " · " + plural(t[1], "tool call")));
    t[2].forEach(function (step) {
      var li = el("li", step[0] === null ? "note" : "step"), head = el("div", "step-head");
      head.appendChild(el("b", null, step[0] === null ? step[1] : "Step " + step[0]));
      var facts = step[0] === null || step[1] === "tool call" ? [] : [step[1]];
      if (step[2] !== null) facts.push(fmtDuration(step[2]));
      if (step[3] !== null) facts.push(plural(step[3], "token"));
      if (facts.length) head.appendChild(document.createTextNode(" · " + facts.join(" · ")));
      li.appendChild(head);
      if (step[4] !== null) li.appendChild(el("pre", "said", step[4]));
      if (step[5] !== null) li.appendChild(labelled("error", step[5], "err"));
      if (step[6].length) {
        var calls = el("ul", "calls");
        step[6].forEach(function (call) { calls.appendChild(toolCall(call)); });
        li.appendChild(calls);
      }
      list.appendChild(li);
    });
    box.appendChild(list);
    return box;
  }
  function toolCall(call) {
    var li = el("li", "call"), head = el("div", "call-head", "tool call ");
    head.appendChild(el("code", null, call[0] === null ? "(unnamed)" : call[0]));
    if (call[4] !== null) head.appendChild(document.createTextNode(" · " + fmtDuration(call[4])));
    li.appendChild(head);
    if (call[1] !== null) li.appendChild(labelled("arguments", call[1]));
    if (call[2] !== null) li.appendChild(labelled("result", call[2]));
    if (call[3] !== null) li.appendChild(labelled("error", call[3], "err"));
    return li;
  }
  function labelled(name, text, cls) {
    var box = el("div", "io" + (cls ? " " + cls : ""));
    box.appendChild(el("span", "io-name", name));
    box.appendChild(el("pre", null, text));
    return box;
  }

  // Each run of a repeated item: [status, output, error, latency, score cells].
  Table.prototype.repeatTable = function (repeats) {
    var box = el("section", "wide repeats"), table = el("table", "scores"), head = el("tr"), thresholds = this.thresholds;
    box.appendChild(el("h4", null, "Repeats · " + repeats.filter(function (r) { return r[0] === "passed"; }).length
      + " of " + repeats.length + " passed"));
    ["#", "Verdict", "Output"].concat(this.scorers, ["Latency"]).forEach(function (name) {
      head.appendChild(el("th", null, name));
    });
    table.appendChild(head);
    repeats.forEach(function (r, n) {
      var tr = el("tr"), verdict = el("td");
      tr.appendChild(el("td", "num", String(n + 1)));
      verdict.appendChild(el("span", "pill pill-" + VERDICT[r[0]], VERDICT[r[0]]));
      tr.appendChild(verdict);
      tr.appendChild(r[1] === null && r[2] !== null ? textCell(r[2], "err") : textCell(r[1]));
      r[4].forEach(function (score, k) { tr.appendChild(scoreCell(score, thresholds[k])); });
      tr.appendChild(el("td", "num", fmtDuration(r[3])));
      table.appendChild(tr);
    });
    box.appendChild(table);
    return box;
  };

  Table.prototype.scoreTable = function (scores) {
    var box = el("section", "wide"), table = el("table", "scores"), head = el("tr");
    box.appendChild(el("h4", null, "Scores"));
    ["Scorer", "Score", "Reason"].forEach(function (name) { head.appendChild(el("th", null, name)); });
    table.appendChild(head);
    for (var k = 0; k < this.scorers.length; k++) {
      var score = scores[k], tr = el("tr"), cell = el("td");
      tr.appendChild(el("td", "mono", this.scorers[k]));
      if (score) {
        cell.appendChild(scorePill(score, this.thresholds[k]));
        if (score[1] === "pass" || score[1] === "fail") cell.appendChild(document.createTextNode(" " + score[1]));
      } else cell.textContent = "—";
      tr.appendChild(cell);
      tr.appendChild(el("td", "reason", score && score[2] ? score[2] : "—"));
      table.appendChild(tr);
    }
    box.appendChild(table);
    return box;
  };

  // ---- the variants of an experiment side by side ------------------------------------------
  // One row per item id, one column group per variant (verdict, output, scores); a row opens
  // to the variants' full answers next to each other. Reads the variants' rows through itemsOf.
  var SIDE_PAGE = 50;
  function itemsOf(number) { return DATA.experiments[number].items; }

  function SideBySide(section) {
    var numbers = section.getAttribute("data-variants").split(",").map(Number), self = this;
    this.section = section;
    this.names = Array.prototype.map.call(section.querySelectorAll(".variants-table tbody tr"),
      function (tr) { return tr.getAttribute("data-variant"); });
    this.scorers = numbers.map(function (n) { return DATA.experiments[n].scorers; });
    this.thresholds = numbers.map(function (n) { return DATA.experiments[n].thresholds; });
    var byId = new Map(), order = [];
    numbers.forEach(function (number, v) {
      itemsOf(number).forEach(function (it) {
        var row = byId.get(it[F.id]);
        if (!row) { row = new Array(numbers.length).fill(null); byId.set(it[F.id], row); order.push(it[F.id]); }
        row[v] = it;
      });
    });
    this.rows = order.map(function (id) { return { id: id, cells: byId.get(id) }; });
    this.filter = section.querySelector(".side-filter");
    this.page = 0;
    this.open = new Set();
    this.filter.addEventListener("change", function () { self.page = 0; self.render(); });
    section.querySelectorAll("[data-side-page]").forEach(function (button) {
      button.addEventListener("click", function () {
        self.page += button.getAttribute("data-side-page") === "next" ? 1 : -1;
        self.render();
      });
    });
    var tbody = section.querySelector(".side-table tbody");
    tbody.addEventListener("click", function (event) {
      var tr = event.target.closest("tr.side-row");
      if (tr && !String(window.getSelection())) self.toggle(tr);  // not when selecting text
    });
    tbody.addEventListener("keydown", function (event) {  // as in the item table
      var tr = event.target, key = event.key;
      if (!tr.classList || !tr.classList.contains("side-row")) return;
      if (key === "Enter" || key === " " || (key === "Escape" && tr.getAttribute("aria-expanded") === "true")) self.toggle(tr);
      else if (key === "ArrowDown" || key === "j") focusRow(tr, 1, "side-row");
      else if (key === "ArrowUp" || key === "k") focusRow(tr, -1, "side-row");
      else return;
      event.preventDefault();
    });
    this.head();
    this.render();
  }

  function statusOf(it) { return it ? it[F.status] : null; }

  // Show or hide a row's answers; the row keeps the focus through the new view.
  SideBySide.prototype.toggle = function (tr) {
    var id = tr.getAttribute("data-id");
    if (this.open.has(id)) this.open.delete(id); else this.open.add(id);
    this.render();
    var again = this.section.querySelector(".side-table tbody tr.side-row[data-id='" + CSS.escape(id) + "']");
    if (again) again.focus();
  };

  SideBySide.prototype.matches = function (row) {
    var wanted = this.filter.value, statuses = row.cells.map(statusOf);
    if (wanted === "disagree") return statuses.some(function (s) { return s !== statuses[0]; });
    if (wanted === "regressed") {
      return statuses[0] === "passed" && statuses.slice(1).some(function (s) { return s === "failed" || s === "error"; });
    }
    return true;
  };

  SideBySide.prototype.head = function () {
    var thead = this.section.querySelector(".side-table thead"), top = el("tr"), sub = el("tr");
    var item = el("th", null, "Item"), input = el("th", null, "Input");
    item.rowSpan = 2; input.rowSpan = 2;
    top.appendChild(item); top.appendChild(input);
    this.names.forEach(function (name, v) {
      var group = el("th", "side-group", name + (v === 0 ? " (baseline)" : ""));
      group.colSpan = 3;
      top.appendChild(group);
      ["Verdict", "Output", "Scores"].forEach(function (what) { sub.appendChild(el("th", null, what)); });
    });
    thead.appendChild(top);
    thead.appendChild(sub);
  };

  function scoreList(scorers, thresholds, it) {
    var td = el("td", "score");
    if (!it) { td.appendChild(el("span", "nil", "—")); return td; }
    scorers.forEach(function (sid, k) {
      var score = it[F.scores][k];
      if (!score) return;
      var line = el("div");
      line.appendChild(el("span", "mono", sid + " "));
      line.appendChild(scorePill(score, thresholds[k]));
      // a score without a verdict of its own says what it found in its reason (pairwise: which answer is better)
      if (score[1] === "" && score[2]) line.appendChild(el("span", "why", " " + clip(score[2])));
      td.appendChild(line);
    });
    return td;
  }

  SideBySide.prototype.render = function () {
    var self = this, shown = this.rows.filter(function (row) { return self.matches(row); });
    var pages = Math.max(1, Math.ceil(shown.length / SIDE_PAGE));
    this.page = Math.min(Math.max(0, this.page), pages - 1);
    var tbody = this.section.querySelector(".side-table tbody"), width = 2 + 3 * this.names.length;
    tbody.replaceChildren();
    shown.slice(this.page * SIDE_PAGE, (this.page + 1) * SIDE_PAGE).forEach(function (row) {
      var first = row.cells.filter(Boolean)[0], tr = el("tr", "side-row");
      tr.setAttribute("data-id", row.id);
      tr.setAttribute("aria-expanded", self.open.has(row.id) ? "true" : "false");
      tr.tabIndex = 0;
      tr.appendChild(el("td", "item-id", row.id));
      tr.appendChild(textCell(first[F.input])).setAttribute("data-label", "input");
      row.cells.forEach(function (it, v) {
        var verdict = el("td");
        verdict.setAttribute("data-label", self.names[v] + (v === 0 ? " (baseline)" : ""));  // a phone shows no heading
        if (it) verdict.appendChild(el("span", "pill pill-" + VERDICT[it[F.status]], VERDICT[it[F.status]]));
        else verdict.appendChild(el("span", "nil", "not run"));
        tr.appendChild(verdict);
        tr.appendChild(textCell(it ? (it[F.output] === null ? it[F.error] : it[F.output]) : null, it && it[F.output] === null ? "err" : null));
        tr.appendChild(scoreList(self.scorers[v], self.thresholds[v], it));
      });
      tbody.appendChild(tr);
      if (self.open.has(row.id)) tbody.appendChild(self.answers(row, width));
    });
    this.section.querySelector(".side-showing").textContent = fmt(shown.length) + " of " + plural(this.rows.length, "item");
    this.section.querySelector(".side-page-of").textContent = "page " + (this.page + 1) + " of " + pages;
    this.section.querySelector("[data-side-page=prev]").disabled = this.page === 0;
    this.section.querySelector("[data-side-page=next]").disabled = this.page === pages - 1;
  };

  // The variants' full answers next to each other, each with its scores and their reasons.
  SideBySide.prototype.answers = function (row, width) {
    var tr = el("tr", "side-detail"), td = el("td"), grid = el("div", "side-answers"), self = this;
    td.colSpan = width;
    var first = row.cells.filter(Boolean)[0];
    td.appendChild(labelled("input", first[F.input] === null ? "" : first[F.input]));
    if (first[F.expected] !== null) td.appendChild(labelled("expected", first[F.expected]));
    row.cells.forEach(function (it, v) {
      var box = el("section", "side-answer");
      box.appendChild(el("h4", null, self.names[v] + (v === 0 ? " (baseline)" : "")));
      if (!it) { box.appendChild(el("p", "nil", "not run")); grid.appendChild(box); return; }
      box.appendChild(el("span", "pill pill-" + VERDICT[it[F.status]], VERDICT[it[F.status]]));
      box.appendChild(el("pre", "answer", it[F.output] === null ? "" : it[F.output]));
      if (it[F.error] !== null) box.appendChild(labelled("error", it[F.error], "err"));
      self.scorers[v].forEach(function (sid, k) {
        var score = it[F.scores][k];
        if (!score) return;
        var line = el("p", "side-score");
        line.appendChild(el("span", "mono", sid + " "));
        line.appendChild(scorePill(score, self.thresholds[v][k]));
        if (score[2]) line.appendChild(el("span", "why", " " + score[2]));
        box.appendChild(line);
      });
      grid.appendChild(box);
    });
    td.appendChild(grid);
    tr.appendChild(td);
    return tr;
  };

  // A side-by-side view is made once every variant's rows are read (their sections are built at once).
  var sides = Array.prototype.map.call(document.querySelectorAll("section.variants[data-variants]"), function (section) {
    return { section: section, numbers: section.getAttribute("data-variants").split(",").map(Number), made: false };
  });
  function variantsRead() {
    sides.forEach(function (side) {
      if (side.made || !side.numbers.every(function (n) { return DATA.experiments[n].read; })) return;
      side.made = true;
      new SideBySide(side.section);
    });
  }

  // ---- start ---------------------------------------------------------------------------------
  // Sections after the first few come as <template>s, each built when it nears the viewport
  // (or the page is printed): a run of a thousand experiments opens as fast as one of a few.
  function build(section) {
    var template = section.querySelector(":scope > template");
    if (template) {
      section.replaceChildren(template.content);
      section.removeAttribute("data-lazy");
    }
    var number = +section.getAttribute("data-experiment"), exp = DATA.experiments[number], table = null;
    return load(exp, function (done) {
      if (done) exp.read = true;
      if (table) table.grew(done);
      else {
        table = new Table(section, exp);
        tables.push(table);
        if (done) table.grew(true);
      }
      if (done && SERVED && SERVED.item) {  // one item's page: the item opened
        var row = table.tbody.querySelector("tr.row");
        if (row) table.toggle(row);
      }
      if (done) variantsRead();
    }, number).catch(function (error) {  // a browser without DecompressionStream (before 2023)
      section.querySelector(".showing").textContent = SERVED ? SERVED.failed(error)
        : "This browser cannot read the items of this page; open it in a current one, or see results.json.";
      console.error(error);
    });
  }
  var cut = DATA.cut;
  if (cut && cut.texts) {
    var notice = document.getElementById("cut-notice");
    notice.textContent = fmt(cut.texts) + " text" + (cut.texts === 1 ? " is" : "s are") + " cut in this page, to "
      + fmt(cut.cap) + " characters" + (cut.budget ? ", so that it stays within " + cut.max_mb + " MB" : "")
      + ": results.json and the results database keep them whole (yamleval export RUN writes them out).";
    notice.hidden = false;
  }
  var eager = Array.prototype.map.call(document.querySelectorAll("section.experiment:not([data-lazy])"), build);
  var sideBySide = new Set();
  sides.forEach(function (side) { side.numbers.forEach(function (n) { sideBySide.add(n); }); });
  var lazy = Array.prototype.filter.call(document.querySelectorAll("section.experiment[data-lazy]"), function (section) {
    if (!sideBySide.has(+section.getAttribute("data-experiment"))) return true;
    build(section);  // a variant's rows are wanted side by side now
    return false;
  });
  if (lazy.length) {
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { observer.unobserve(entry.target); build(entry.target); }
      });
    }, { rootMargin: "1000px 0px" });
    lazy.forEach(function (section) { observer.observe(section); });
    window.addEventListener("beforeprint", function () {
      lazy.forEach(function (section) {
        if (section.hasAttribute("data-lazy")) { observer.unobserve(section); build(section); }
      });
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target, tag = target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable) return;
    var section = target.closest && target.closest("section.experiment");
    var table = tables.filter(function (t) { return t.section === section; })[0] || tables[0];
    if (table) { event.preventDefault(); table.search.focus(); }
  });
  Promise.all(eager).then(function () { document.documentElement.setAttribute("data-ready", "true"); });
})();
