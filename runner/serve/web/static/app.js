// lockgate status page: reads /api/syncs (and /api/syncs/NAME) every few seconds and renders
// them with DOM calls only (textContent, never innerHTML), so no value can become markup.
// Messages come whole with a one-line summary made by the server: where room is short the
// summary is shown, and the whole message is one click away (a <details> that stays open
// across updates).
"use strict";

(function () {
  const POLL_MS = 2000;
  const main = document.getElementById("main");
  const updated = document.getElementById("updated");
  const mode = document.getElementById("mode");
  const path = window.location.pathname;
  const match = path.match(/^\/sync\/([^/]+)$/);
  const syncName = match ? decodeURIComponent(match[1]) : null;
  let lastBody = "";
  let timer = null;
  let failing = false;
  let renderedAt = 0;
  const RELATIVE_MS = 30000;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function shortDigest(digest) {
    const at = (digest || "").indexOf("sha256:");
    return at < 0 ? digest || "" : digest.slice(0, at) + "sha256:" + digest.slice(at + 7, at + 19);
  }

  function when(text) {
    if (!text) return "";
    const date = new Date(text);
    if (Number.isNaN(date.getTime())) return text;
    return el("time", { datetime: text, title: text }, relative(date));
  }

  function relative(date) {
    const seconds = Math.round((date.getTime() - Date.now()) / 1000);
    const abs = Math.abs(seconds);
    let amount;
    if (abs < 60) amount = abs + " s";
    else if (abs < 3600) amount = Math.round(abs / 60) + " min";
    else if (abs < 86400) amount = Math.round(abs / 3600) + " h";
    else amount = Math.round(abs / 86400) + " d";
    return seconds > 1 ? "in " + amount : abs <= 1 ? "now" : amount + " ago";
  }

  // the summary, and the whole message behind it when they differ
  function expandable(summary, whole, key) {
    if (!whole) return null;
    if (!summary || summary === whole) return el("span", { class: "message" }, whole);
    return el(
      "details",
      { class: "message", "data-key": key },
      el("summary", {}, summary),
      el("pre", {}, whole),
    );
  }

  // a length of time, as relative() words it
  function span(total) {
    const abs = Math.max(0, Math.round(total));
    if (abs < 60) return abs + " s";
    if (abs < 3600) return Math.ceil(abs / 60) + " min";
    return Math.floor(abs / 3600) + " h " + Math.ceil((abs % 3600) / 60) + " min";
  }

  function seconds(value) {
    if (value === null || value === undefined) return "";
    return value < 10 ? value.toFixed(2) + " s" : value.toFixed(1) + " s";
  }

  function badge(ok, text, extra) {
    return el("span", { class: "badge " + (ok === true ? "ok" : ok === false ? "bad" : "unknown") + (extra ? " " + extra : "") }, text);
  }

  function readyBadges(sync) {
    const ready = sync.ready || {};
    const status = ready.status === "True" ? badge(true, "Ready") : ready.status === "False" ? badge(false, "Not ready") : badge(null, "Ready unknown");
    const parts = [status];
    if (sync.suspended) parts.push(" ", badge(null, "Suspended", "warn"));
    if (sync.running) parts.push(" ", badge(null, "Running", "running"));
    if (ready.reason && ready.status !== "True") parts.push(" ", el("span", { class: "word" }, ready.reason));
    return parts;
  }

  function resultBadge(result) {
    if (!result) return badge(null, "Not run");
    const ok = result === "Succeeded" ? true : ["RolledBack", "Progressing", "Abandoned"].includes(result) ? null : false;
    return badge(ok, result, result === "RolledBack" || result === "Abandoned" ? "warn" : "");
  }

  function attemptCell(attempt, sync) {
    if (!attempt) return [resultBadge(""), sync.nextPass === "" && sync.suspended ? " (suspended)" : ""];
    const took = attempt.seconds !== null && attempt.seconds !== undefined ? el("span", { class: "duration" }, " (" + seconds(attempt.seconds) + ")") : null;
    return [resultBadge(attempt.result), " ", when(attempt.time), took];
  }

  // a revision breaks only after its "@": the digest stays one word
  function revisionCode(revision) {
    const text = shortDigest(revision);
    const at = text.indexOf("@");
    return at < 0 ? el("code", { class: "revision" }, text) : el("code", { class: "revision" }, text.slice(0, at + 1), el("wbr"), text.slice(at + 1));
  }

  // who signed, in one line ("key sha256:…", an identity); where the key was read from (a long
  // path) is in its title and for screen readers, and whole on the sync's page
  function signerCell(verifiedBy) {
    if (!verifiedBy) return "";
    const open = verifiedBy.indexOf(" (");
    if (open < 0 || !verifiedBy.endsWith(")")) return el("span", { class: "signer", title: verifiedBy }, verifiedBy);
    return el("span", { class: "signer", title: verifiedBy }, verifiedBy.slice(0, open), el("span", { class: "visually-hidden" }, verifiedBy.slice(open)));
  }

  function revisionCell(sync) {
    const revision = sync.revision || sync.digest || "";
    const parts = [revisionCode(revision)];
    if (sync.commit) {
      const label = (sync.commit.revision || sync.commit.source).replace(/([0-9a-f]{12})[0-9a-f]+$/, "$1");
      parts.push(el("br"));
      parts.push(
        sync.commit.url
          ? el("a", { href: sync.commit.url, class: "commit", rel: "noopener noreferrer" }, "source ", label)
          : el("span", { class: "commit" }, "source ", label),
      );
    }
    return parts;
  }

  // a cluster's word about a digest: healthy / failing since when, unverified, or not yet
  const STATES = { healthy: [true, "Healthy"], failing: [false, "Failing"], unverified: [null, "Unverified"], none: [null, "Not yet"] };

  function stateBadge(cell) {
    const [ok, text] = STATES[cell.state] || [null, cell.state];
    return badge(ok, text, cell.state === "unverified" ? "warn" : "");
  }

  function clusterCell(cell, key) {
    const parts = [stateBadge(cell)];
    if (cell.since) parts.push(" ", el("span", { class: "since" }, "since ", when(cell.since)));
    if (cell.state === "unverified" && cell.reason) parts.push(expandable("why it does not count", cell.reason, key));
    return parts;
  }

  // the overview's column: the clusters that attested the digest it runs, and what a waiting sync lacks
  function attestedCell(sync, mode) {
    const fleet = sync.fleet;
    if (!fleet) return mode === "serve" ? el("span", { class: "word", title: "This sync neither requires nor writes attestations" }, "—") : "n/a";
    if (fleet.error) return badge(null, "Unknown", "warn");
    const current = (fleet.digests || []).find((d) => d.role === "current");
    const parts = [];
    if (current) {
      const shown = fleet.clusters.filter((c) => current.cells[c].state !== "none");
      if (shown.length > 6) {
        const count = (state) => shown.filter((c) => current.cells[c].state === state).length;
        parts.push(count("healthy") + " healthy, " + count("failing") + " failing, " + count("unverified") + " unverified");
      } else {
        shown.forEach((c, i) => parts.push(i ? " " : "", badge(STATES[current.cells[c].state][0], c, current.cells[c].state === "unverified" ? "warn" : "")));
      }
    }
    const missing = (fleet.waitsFor || []).filter((w) => !w.ok).flatMap((w) => (w.clusters.length ? w.clusters.map((c) => c.cluster) : [w.requirement]));
    if (missing.length) parts.push(el("span", { class: "reason" }, "waits for " + missing.join(", ")));
    return parts.length ? parts : "none yet";
  }

  function cell(label, ...children) {
    return el("td", { "data-label": label }, ...children);
  }

  function overview(doc) {
    const rows = doc.syncs.map((sync) =>
      el(
        "tr",
        { id: "sync-" + sync.name, "data-sync": sync.name },
        el("th", { scope: "row", "data-label": "Sync" }, el("a", { href: "/sync/" + encodeURIComponent(sync.name) }, sync.name)),
        cell(
          "Ready",
          readyBadges(sync),
          sync.ready && sync.ready.status !== "True" ? el("div", { class: "reason" }, expandable(sync.ready.summary, sync.ready.message, "ready-" + sync.name)) : null,
        ),
        cell("Revision", revisionCell(sync)),
        cell("Digest", el("code", { class: "digest", title: sync.digest }, shortDigest(sync.digest))),
        cell("Verified by", signerCell(sync.verifiedBy)),
        cell("Health", sync.health),
        cell("Attested in", attestedCell(sync, doc.mode)),
        cell("Last attempt", attemptCell(sync.lastAttempt, sync)),
        cell("Next pass", sync.nextPass ? when(sync.nextPass) : sync.nextPass === null ? "n/a" : "not scheduled"),
      ),
    );
    const table = el(
      "table",
      { class: "syncs" },
      el("caption", {}, doc.syncs.length + (doc.syncs.length === 1 ? " sync" : " syncs")),
      el(
        "thead",
        {},
        el("tr", {}, ["Sync", "Ready", "Revision", "Digest", "Verified by", "Health", "Attested in", "Last attempt", "Next pass"].map((h) => el("th", { scope: "col" }, h))),
      ),
      el("tbody", {}, rows),
    );
    const parts = [el("h1", {}, "Syncs"), doc.syncs.length ? el("div", { class: "scroll" }, table) : el("p", {}, "No syncs have run in this namespace.")];
    if (doc.problems && doc.problems.length) {
      parts.push(el("h2", {}, "Problems"), el("ul", { class: "problems" }, doc.problems.map((p) => el("li", {}, p))));
    }
    return parts;
  }

  function section(id, title, ...content) {
    return el("section", { "aria-labelledby": id + "-h", id: id }, el("h2", { id: id + "-h" }, title), ...content);
  }

  // a table that may be wider than the page scrolls in a region the keyboard can reach
  function table(caption, headers, rows, cls, focusable) {
    return el(
      "div",
      focusable ? { class: "scroll", tabindex: "0", role: "region", "aria-label": caption } : { class: "scroll" },
      el(
        "table",
        { class: cls || "" },
        el("caption", { class: "visually-hidden" }, caption),
        el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, rows.map((row) => el("tr", {}, row.map((value, i) => cell(headers[i], value))))),
      ),
    );
  }

  function liveOnly(doc, value, render) {
    if (!doc.live) return el("p", { class: "note" }, "Known only to a running lockgate serve (this view reads the inventories).");
    return render(value);
  }

  function fieldValue(change, side) {
    if (!(side in change)) return el("span", { class: "absent" }, "(absent)");
    const value = change[side];
    return el("code", {}, typeof value === "string" ? value : JSON.stringify(value));
  }

  function changeSet(objects) {
    return el(
      "ul",
      { class: "changes" },
      objects.map((entry) =>
        el(
          "li",
          { class: "change", "data-object": entry.object },
          el("p", {}, el("code", {}, entry.object), " ", badge(entry.action === "deleted" ? false : null, entry.action), entry.reason ? " " + entry.reason : ""),
          entry.changes && entry.changes.length
            ? table(
                "Field changes of " + entry.object,
                ["Field", "Before", "After"],
                entry.changes.map((c) => [el("code", {}, c.path), fieldValue(c, "before"), fieldValue(c, "after")]),
                "fields",
              )
            : null,
        ),
      ),
    );
  }

  function fleetSection(fleet) {
    if (!fleet) return el("p", {}, "This sync neither requires attestations nor writes them: no key to check them with.");
    if (fleet.error) return el("p", { class: "error" }, fleet.error);
    const parts = [];
    if (!fleet.digests.length) parts.push(el("p", {}, "No digest applied or wanted yet."));
    else if (!fleet.clusters.length) parts.push(el("p", {}, "No cluster has attested these digests yet."));
    else {
      const label = (d) => [d.role === "current" ? "Runs " : "Wants ", el("code", { class: "digest", title: d.digest }, shortDigest(d.digest))];
      parts.push(
        table(
          "Health attestations of this sync's digests, by cluster",
          ["Digest", ...fleet.clusters],
          fleet.digests.map((d) => [label(d), ...fleet.clusters.map((c) => clusterCell(d.cells[c], "fleet-" + d.role + "-" + c))]),
          "fleet",
          true,
        ),
      );
    }
    if (fleet.waitsFor.length) {
      const rows = fleet.waitsFor.flatMap((w) => {
        const met = w.ok ? badge(true, "Met") : badge(false, w.excluded ? "Refused" : "Waiting");
        const clusters = w.clusters.length ? w.clusters : [null];
        return clusters.map((c) => [
          w.requirement,
          c ? c.cluster : "any",
          c ? clusterCell(c, "waits-" + w.requirement + "-" + c.cluster) : met,
          c && c.soakLeft !== null && c.soakLeft !== undefined ? span(c.soakLeft) : "",
          [met, w.reason ? el("span", { class: "reason" }, w.reason) : null],
        ]);
      });
      parts.push(el("h3", {}, "What the wanted digest waits for"), table("Each requirement, cluster by cluster", ["Requirement", "Cluster", "Attestation", "Soak left", "Verdict"], rows, "waits", true));
    }
    parts.push(el("p", { class: "note" }, "Read from the registry ", when(fleet.checkedAt), ", again after the sync's interval; checked against the keys of its attestation requirements and its runner's own key. Unverified: signed by none of them, so it never counts."));
    return parts;
  }

  function detail(doc) {
    const attempt = doc.lastAttempt;
    const facts = [
      ["Namespace", doc.namespace],
      ["Ready", readyBadges(doc)],
      ["Source", doc.source ? el("code", {}, doc.source) : "none pulled yet"],
      ["Revision", doc.revision || doc.digest ? revisionCell(doc) : "none applied yet"],
      ["Digest", doc.digest ? el("code", { class: "digest" }, doc.digest) : "none applied yet"],
      ["Verified by", doc.verifiedBy || "none applied yet"],
      ["Health", doc.health],
      ["Waiting for", el("span", { id: "waiting" }, doc.waiting || "nothing")],
      ["Last attempt", [attemptCell(attempt, doc), attempt && attempt.revision ? [" at ", el("code", {}, shortDigest(attempt.revision))] : null]],
      ["Next pass", doc.nextPass ? when(doc.nextPass) : doc.nextPass === null ? "n/a (no lockgate serve)" : "not scheduled"],
      ["Objects", String(doc.members)],
    ];
    if (doc.rejected && doc.rejected.length) facts.push(["Rolled back from", doc.rejected.map((d) => el("code", {}, shortDigest(d) + " "))]);
    const parts = [
      el("p", { class: "crumbs" }, el("a", { href: "/" }, "All syncs")),
      el("h1", {}, "Sync ", el("span", { class: "name" }, doc.name)),
      el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    ];
    // the whole messages: why the sync is not ready, and how the last attempt ended
    if (doc.ready && doc.ready.status !== "True" && doc.ready.message) {
      parts.push(el("div", { class: "error", role: "note", id: "why" }, el("strong", {}, "Not ready (" + doc.ready.reason + "): "), el("pre", {}, doc.ready.message)));
    }
    if (attempt && attempt.result !== "Succeeded" && attempt.message && !(doc.ready && attempt.message === doc.ready.message)) {
      parts.push(el("div", { class: "error", role: "note", id: "attempt" }, el("strong", {}, "Last attempt " + attempt.result + ": "), el("pre", {}, attempt.message)));
    }
    parts.push(
      section(
        "unhealthy",
        "Unhealthy objects now",
        liveOnly(doc, doc.unhealthy, (items) =>
          items.length
            ? table("Unhealthy objects", ["Object", "Status", "Reason"], items.map((u) => [el("code", {}, u.object), badge(false, u.status), u.message]), "unhealthy")
            : el("p", {}, "None in the last pass."),
        ),
      ),
      section("fleet", "Fleet", liveOnly(doc, doc.fleet, fleetSection)),
      section(
        "history",
        "History",
        doc.history.length
          ? table(
              "History, newest first",
              ["Time", "Revision", "Result", "Health", "Verified by", "Message"],
              doc.history.map((h, i) => [when(h.time), el("code", {}, shortDigest(h.revision || h.digest)), resultBadge(h.result), h.health, h.verifiedBy, expandable(h.summary, h.message, "history-" + i + "-" + h.digest)]),
              "history",
            )
          : el("p", {}, "No passes recorded yet."),
      ),
      section(
        "changes",
        "Last change set",
        liveOnly(doc, doc.lastChange, (change) =>
          change
            ? [el("p", {}, when(change.time), change.rollback ? " by the rollback to " : " at ", el("code", {}, shortDigest(change.revision))), changeSet(change.objects)]
            : el("p", {}, "No pass of this serve has changed anything yet."),
        ),
      ),
      section(
        "drift",
        "Drift corrections",
        liveOnly(doc, doc.drift, (items) =>
          items.length
            ? el("ul", { class: "drift" }, items.map((d) => el("li", {}, when(d.time), ": ", d.objects.map((o) => o.object).join(", "))))
            : el("p", {}, "None since this serve started."),
        ),
      ),
      section(
        "events",
        "Events",
        doc.eventsError
          ? el("p", { class: "error" }, doc.eventsError)
          : doc.events.length
          ? table("Events lockgate wrote, newest first", ["Time", "Type", "Reason", "Message"], doc.events.map((e, i) => [when(e.time), badge(e.type === "Normal" ? true : false, e.type), e.reason, expandable(e.summary, e.message, "event-" + i + "-" + e.time)]), "events")
          : el("p", {}, "No Events (they expire after an hour by default)."),
      ),
    );
    return parts;
  }

  function render(doc) {
    const focused = document.activeElement;
    const focusKey = focused && focused.getAttribute ? focused.getAttribute("href") : null;
    // a whole message someone opened stays open when the page updates
    const open = new Set(Array.from(main.querySelectorAll("details[open][data-key]"), (d) => d.getAttribute("data-key")));
    main.replaceChildren(...(syncName ? detail(doc) : overview(doc)).flat());
    for (const details of main.querySelectorAll("details[data-key]")) {
      if (open.has(details.getAttribute("data-key"))) details.open = true;
    }
    if (focusKey) {
      const again = main.querySelector('a[href="' + CSS.escape(focusKey) + '"]');
      if (again) again.focus();
    }
    document.title = (syncName ? syncName + " · " : "") + "lockgate status";
    mode.textContent = doc.mode === "serve" ? ", and from this lockgate serve" : " (lockgate status --web)";
  }

  async function poll() {
    const url = syncName ? "/api/syncs/" + encodeURIComponent(syncName) : "/api/syncs";
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
      const text = await response.text();
      if (!response.ok) {
        let message = response.status + " " + response.statusText;
        try {
          message = JSON.parse(text).error || message;
        } catch (_) {
          /* not JSON */
        }
        failing = true;
        updated.textContent = "Could not update: " + message;
        if (lastBody === "") main.replaceChildren(el("h1", {}, syncName || "Syncs"), el("p", { class: "error" }, message));
        return;
      }
      const doc = JSON.parse(text);
      const body = JSON.stringify({ ...doc, time: "" });
      if (body !== lastBody || failing) {
        lastBody = body;
        failing = false;
        render(doc);
        renderedAt = Date.now();
        updated.textContent = "Updated " + new Date().toLocaleTimeString();
      } else if (Date.now() - renderedAt > RELATIVE_MS) {
        render(doc); // "5 s ago" ages; the live region is left alone
        renderedAt = Date.now();
      }
    } catch (error) {
      failing = true;
      updated.textContent = "Could not update: " + error;
    } finally {
      timer = window.setTimeout(poll, POLL_MS);
    }
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer !== null) {
      window.clearTimeout(timer);
      poll();
    }
  });
  updated.textContent = "Loading…";
  poll();
})();
