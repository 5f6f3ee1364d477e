(function () {
  "use strict";
  // What yamleval serve adds to the report's page (report.js runs next and asks it for rows):
  // the rows read from the server a page at a time, links to each item's page, and, while the
  // run runs, its progress as the server streams it. Every value reaches the page as text.
  var DATA = JSON.parse(document.getElementById("data").textContent);
  var SERVED = DATA.served, PAGE = 2000;

  function read(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (reply) {
      if (!reply.ok) {
        return reply.json().then(function (body) { throw new Error(body.error || reply.statusText); },
                                 function () { throw new Error(reply.status + " " + reply.statusText); });
      }
      return reply.json();
    });
  }

  function itemHref(experiment, item) {
    var base = SERVED.items + encodeURIComponent(experiment) + "/";
    // a browser drops a path's "." or ".." part, quoted or not: such an id goes as ?item=
    return item === "." || item === ".." ? base + "?item=" + encodeURIComponent(item) : base + encodeURIComponent(item);
  }

  window.YAMLEVAL_SERVED = {
    item: !!SERVED.item,
    // the experiment's rows in dataset order, PAGE at a time: {rows, more} each, then null
    source: function (number) {
      var after = -1, more = true, experiment = SERVED.experiments[number];
      return function () {
        if (!more) return Promise.resolve(null);
        return read(SERVED.rows + "?experiment=" + encodeURIComponent(experiment) + "&after=" + after
                    + "&limit=" + PAGE).then(function (page) {
          after = page.after;
          more = page.more;
          return { rows: page.rows, more: more };
        });
      };
    },
    itemLink: function (experiment, item) {
      var link = document.createElement("a");
      link.className = "item-link";
      link.href = itemHref(experiment, item);
      link.textContent = "Open the item's page";
      return link;
    },
    failed: function (error) { return "The items could not be read from the server: " + error.message; },
    review: SERVED.review ? reviewForm : null
  };

  // ---- reviews (yamleval serve --reviews): a person's verdict on an item --------------------------
  var said = {};  // what the server answered to the last review of an item, shown again when its details are redrawn

  function make(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function send(url, body) {
    return fetch(url, { method: "POST", credentials: "same-origin", body: JSON.stringify(body),
                        headers: { "Content-Type": "application/json", Accept: "application/json" } })
      .then(function (reply) {
        return reply.json().then(function (answer) {
          if (!reply.ok) throw new Error(answer.error || reply.statusText);
          return answer;
        });
      });
  }

  // The experiment's figures as they count now: its tiles, its bar and legend, its badge; the run's badge.
  function showFigures(answer) {
    var exp = answer.experiment, section = null;
    document.querySelectorAll("section.experiment").forEach(function (node) {
      if (node.getAttribute("data-id") === exp.id) section = node;
    });
    if (section) {
      var stats = section.querySelector(".stats");
      Object.keys(exp.stats).forEach(function (name) {
        var tile = null;
        stats.querySelectorAll("[data-stat]").forEach(function (node) { if (node.getAttribute("data-stat") === name) tile = node; });
        if (!tile) {
          tile = make("div", "stat");
          tile.setAttribute("data-stat", name);
          tile.appendChild(make("div", "stat-value"));
          tile.appendChild(make("div", "stat-name", name));
          stats.appendChild(tile);
        }
        tile.querySelector(".stat-value").textContent = exp.stats[name];
      });
      exp.shares.forEach(function (share) {
        var item = section.querySelector("[data-share=" + share.status + "]");
        if (item) {
          item.querySelector("strong").textContent = share.count.toLocaleString("en-US");
          item.querySelector(".muted").textContent = share.percent;
        }
        var bar = section.querySelector("[data-bar=" + share.status + "]");
        if (bar) { bar.setAttribute("x", share.x); bar.setAttribute("width", share.width); }
      });
      var badge = section.querySelector(".exp-title .badge");
      if (badge) { badge.textContent = exp.status.toUpperCase(); badge.className = "badge badge-" + exp.status; }
      showCriteria(section.querySelector("[data-criteria]"), exp.criteria);
      showAgreement(section.querySelector("[data-agreement]"), exp.agreement);
    }
    var run = document.querySelector(".run-title .badge");
    if (run && (answer.verdict === "passed" || answer.verdict === "failed")) {
      run.textContent = answer.verdict.toUpperCase();
      run.className = "badge badge-" + answer.verdict;
    }
  }

  function cell(row, text, cls) {
    var td = make("td", cls, text);
    row.appendChild(td);
    return td;
  }

  // The pass criteria as report.html's table lays them out, counted again.
  function showCriteria(body, criteria) {
    if (!body) return;
    body.replaceChildren();
    criteria.forEach(function (c) {
      var row = make("tr"), name = cell(row, c.name);
      if (c.labelled) { name.appendChild(document.createTextNode(" ")); name.appendChild(make("span", "muted", c.what)); }
      cell(row, c.actual, "num");
      cell(row, c.min, "num");
      cell(row).appendChild(make("span", "sev sev-" + c.severity, c.severity));
      var result = c.skipped ? ["skipped", "skipped"] : c.passed ? ["pass", "met"]
        : [c.severity === "warn" ? "warn" : "fail", "not met"];
      cell(row).appendChild(make("span", "pill pill-" + result[0], result[1]));
      body.appendChild(row);
    });
  }

  // Each scorer's agreement with people, counted again (a panel there is already; the next load adds one).
  function showAgreement(body, agreement) {
    if (!body) return;
    body.replaceChildren();
    agreement.forEach(function (a) {
      var row = make("tr"), scorer = cell(row);
      scorer.appendChild(make("span", "mono", a.scorer));
      if (a.few) { scorer.appendChild(document.createTextNode(" ")); scorer.appendChild(make("span", "muted", "too few to gate on")); }
      cell(row, a.n, "num");
      cell(row, a.rate, "num");
      cell(row, a.kappa, "num");
      [[0, 1], [2, 3]].forEach(function (pair) {
        var td = cell(row, undefined, "num");
        td.appendChild(make("span", "c-pass", String(a.matrix[pair[0]])));
        td.appendChild(document.createTextNode(" / "));
        td.appendChild(make("span", "c-fail", String(a.matrix[pair[1]])));
      });
      body.appendChild(row);
    });
  }

  function reviewForm(experiment, item, status, stored) {
    var box = make("section", "wide review"), key = experiment + "\n" + item;
    box.appendChild(make("h4", null, "Your review"));
    if (status !== "passed" && status !== "failed") {
      box.appendChild(make("p", "muted", "This item " + status + ": it has no verdict to review."));
      return box;
    }
    var name = null;
    if (!SERVED.review.reviewer) {
      name = make("input");
      name.type = "text";
      name.placeholder = "Your name";
      name.setAttribute("aria-label", "Your name");
      try { name.value = window.localStorage.getItem("yamleval-reviewer") || ""; } catch (e) { /* storage off */ }
      box.appendChild(name);
    }
    var note = make("textarea");
    note.rows = 2;
    note.placeholder = "Why (optional)";
    note.setAttribute("aria-label", "Note");
    box.appendChild(note);
    var buttons = make("div", "review-buttons"), message = make("p", "review-said", said[key] || "");
    message.setAttribute("role", "status");
    [["pass", "Pass"], ["fail", "Fail"]].forEach(function (choice) {
      var button = make("button", "review-" + choice[0], choice[1]);
      button.type = "button";
      button.addEventListener("click", function (event) {
        event.stopPropagation();
        var by = name ? name.value.trim() : null;
        if (name && !by) { message.textContent = "Give your name first."; name.focus(); return; }
        if (name) { try { window.localStorage.setItem("yamleval-reviewer", by); } catch (e) { /* storage off */ } }
        message.textContent = "Storing…";
        send(SERVED.review.post, { experiment: experiment, item: item, verdict: choice[0], note: note.value || null, by: by })
          .then(function (answer) {
            said[key] = "Stored: " + answer.review.verdict + " by " + answer.review.by + " (its scorers: "
              + answer.review.machine + ").";
            message.textContent = said[key];
            showFigures(answer);
            stored(answer.item);
          }, function (error) { message.textContent = "Not stored: " + error.message; });
      });
      buttons.appendChild(button);
    });
    box.appendChild(buttons);
    box.appendChild(message);
    return box;
  }

  // ---- the items most worth a review: where a judge and another scorer disagree, and the like -----
  // read once the page is open (it looks at up to 50,000 items): the page does not wait for it
  if (SERVED.queue) read(SERVED.queue).then(showQueue, function () {});
  function showQueue(entries) {
    if (!entries.length) return;
    var queue = make("section", "card queue");
    queue.id = "queue";
    queue.appendChild(make("h2", "section-title", "Worth a review"));
    var list = make("ol");
    entries.forEach(function (entry) {
      var li = make("li"), link = make("a", null, entry.id);
      link.href = itemHref(entry.experiment, entry.id);
      li.appendChild(make("span", "pill pill-" + ({ passed: "pass", failed: "fail" }[entry.status] || entry.status), entry.status));
      li.appendChild(document.createTextNode(" "));
      li.appendChild(link);
      li.appendChild(document.createTextNode(" · " + entry.experiment + " · " + entry.reasons.join("; ")));
      list.appendChild(li);
    });
    queue.appendChild(list);
    var first = document.querySelector("section.experiment");
    if (first) first.parentNode.insertBefore(queue, first);
  }

  // ---- a running run: its progress, as the server sends it --------------------------------------
  var live = document.getElementById("live");
  if (!live || !SERVED.live || typeof EventSource === "undefined") return;
  function part(name) { return live.querySelector("[data-live=" + name + "]"); }
  function fmt(n) { return n === null || n === undefined ? "?" : n.toLocaleString("en-US"); }

  function showProgress(p) {
    part("state").textContent = p.verdict;
    part("finished").textContent = fmt(p.finished);
    part("planned").textContent = fmt(p.planned);
    part("noun").textContent = p.planned === 1 ? "item" : "items";
    p.shares.forEach(function (share) {
      var bar = live.querySelector("[data-live-bar=" + share.status + "]");
      bar.setAttribute("x", share.x);
      bar.setAttribute("width", share.width);
    });
    var meter = part("meter");
    meter.setAttribute("aria-valuenow", Math.round(p.done));
    meter.setAttribute("aria-valuetext", fmt(p.finished) + " of " + fmt(p.planned) + (p.planned === 1 ? " item" : " items") + " finished");
    var rows = part("experiments");
    rows.replaceChildren();
    p.experiments.forEach(function (e) {
      var tr = document.createElement("tr");
      [e.experiment, fmt(e.finished) + " of " + fmt(e.planned), e.status].forEach(function (text, n) {
        var td = document.createElement("td");
        if (n === 0) {  // the id names the variant; the label is its experiment's
          td.appendChild(make("span", "mono", text));
          if (e.label) td.appendChild(make("span", "muted", " " + e.label));
        } else td.textContent = text;
        if (n === 1) td.className = "num";
        tr.appendChild(td);
      });
      rows.appendChild(tr);
    });
  }

  function showItems(items) {
    var list = part("latest"), none = list.querySelector(".none-yet");
    if (none && items.length) none.remove();
    items.forEach(function (it) {
      var li = document.createElement("li"), link = document.createElement("a"), pill = document.createElement("span");
      pill.className = "pill pill-" + ({ passed: "pass", failed: "fail" }[it.status] || it.status);
      pill.textContent = it.status;
      link.href = itemHref(it.experiment, it.id);
      link.textContent = it.id;
      li.appendChild(pill);
      li.appendChild(document.createTextNode(" "));
      li.appendChild(link);
      li.appendChild(document.createTextNode(" · " + it.experiment));
      list.insertBefore(li, list.firstChild);
    });
    while (list.children.length > 20) list.removeChild(list.lastChild);
  }

  function showEnd(end) {
    var badge = document.querySelector(".run-title .badge");
    badge.textContent = end.status.toUpperCase();
    badge.className = "badge badge-" + end.status;
    part("state").textContent = end.status;
    part("ended").hidden = false;
    live.setAttribute("data-ended", end.status);
  }

  var events = new EventSource(SERVED.events);
  events.addEventListener("progress", function (event) { showProgress(JSON.parse(event.data)); });
  events.addEventListener("items", function (event) { showItems(JSON.parse(event.data)); });
  events.addEventListener("end", function (event) {
    events.close();
    showEnd(JSON.parse(event.data));
  });
  events.addEventListener("problem", function (event) {  // the store failed; the browser asks again
    part("state").textContent = "the server cannot read the results database: " + JSON.parse(event.data).error;
  });
  events.addEventListener("error", function () {  // the browser tries again; say so meanwhile
    if (events.readyState !== EventSource.CLOSED) part("state").textContent = "reconnecting…";
  });
})();
