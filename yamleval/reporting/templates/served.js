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
    return SERVED.items + encodeURIComponent(experiment) + "/" + encodeURIComponent(item);
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
    failed: function (error) { return "The items could not be read from the server: " + error.message; }
  };

  // ---- a running run: its progress, as the server sends it --------------------------------------
  var live = document.getElementById("live");
  if (!live || !SERVED.live || typeof EventSource === "undefined") return;
  function part(name) { return live.querySelector("[data-live=" + name + "]"); }
  function fmt(n) { return n === null || n === undefined ? "?" : n.toLocaleString("en-US"); }

  function showProgress(p) {
    part("state").textContent = p.verdict;
    part("finished").textContent = fmt(p.finished);
    part("planned").textContent = fmt(p.planned);
    p.shares.forEach(function (share) {
      var bar = live.querySelector("[data-live-bar=" + share.status + "]");
      bar.setAttribute("x", share.x);
      bar.setAttribute("width", share.width);
    });
    var meter = part("meter");
    meter.setAttribute("aria-valuenow", Math.round(p.done));
    meter.setAttribute("aria-valuetext", fmt(p.finished) + " of " + fmt(p.planned) + " items finished");
    var rows = part("experiments");
    rows.replaceChildren();
    p.experiments.forEach(function (e) {
      var tr = document.createElement("tr");
      [e.label || e.experiment, fmt(e.finished) + " of " + fmt(e.planned), e.status].forEach(function (text, n) {
        var td = document.createElement("td");
        td.textContent = text;
        if (n === 1) td.className = "num";
        tr.appendChild(td);
      });
      rows.appendChild(tr);
    });
  }

  function showItems(items) {
    var list = part("latest");
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
