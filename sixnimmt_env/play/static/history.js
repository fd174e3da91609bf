// The history page: the person's record against each opponent and the saved games (GET /api/history), with a
// link to continue each unfinished game and to replay each finished one at the table.
"use strict";

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
const pct = (x) => `${(100 * x).toFixed(1)}%`;
const when = (t) => new Date(t * 1000).toLocaleString([], {dateStyle: "medium", timeStyle: "short"});

function recordRow(r, cls = "") {
  const ci = r.win_share_ci === null ? "" : ` ± ${(100 * r.win_share_ci).toFixed(1)}`;
  const theirs = r.their_bullheads_per_round === null ? "" : r.their_bullheads_per_round.toFixed(2);
  return `<tr class="${cls}"><td>${esc(r.spec)}</td><td class="num">${r.games}</td><td class="num">${r.rounds}</td>` +
    `<td class="num">${r.bullheads_per_round.toFixed(2)}</td><td class="num">${theirs}</td>` +
    `<td class="num" data-share="${esc(r.spec)}">${pct(r.win_share)}${ci}</td></tr>`;
}

function gameRow(g) {
  const seats = g.names.map((n, s) => (s === g.human ? `<b>${esc(n)} ${g.totals[s]}</b>` : `${esc(n)} ${g.totals[s]}`)).join(", ");
  let result;
  let action;
  if (!g.finished) {
    result = '<span class="open">unfinished</span>';
    action = `<a href="/?continue=${encodeURIComponent(g.id)}">continue</a>`;
  } else {
    result = g.place === null ? "watched" : `<span class="${g.place === 1 ? "place1" : ""}">place ${g.place}</span>`;
    action = `<a href="/?replay=${encodeURIComponent(g.id)}">replay</a>`;
  }
  const c = g.config;
  const rules = `${c.num_players} players · ${c.variant} · ${c.episode === "round" ? "one round" : `to ${c.end_score}`}`;
  return `<tr data-game="${esc(g.id)}"><td>${when(g.updated)}</td><td class="seats">${seats}</td><td>${rules}</td>` +
    `<td class="num">${g.rounds}</td><td>${result}</td><td>${action}</td></tr>`;
}

async function start() {
  let h;
  try {
    const res = await fetch("/api/history");
    h = await res.json();
    if (!res.ok) throw new Error(h.error || `the server answered ${res.status}`);
  } catch (e) {
    $("note").textContent = `Cannot read the history: ${e.message}`;
    return;
  }
  if (!h.saving) {
    $("note").textContent = "This server saves no game (it was started with --no-save): there is no history.";
    $("export").hidden = true;
    return;
  }
  const done = h.games.filter((g) => g.finished).length;
  $("note").textContent = h.games.length
    ? `${h.games.length} game${h.games.length === 1 ? "" : "s"} saved: ${done} finished, ${h.games.length - done} unfinished.`
    : "No game saved yet: play one at the table.";
  if (h.opponents.length) {
    $("record").innerHTML = '<tr><th>Opponent</th><th class="num">Games</th><th class="num">Rounds</th>' +
      '<th class="num">Your bullheads / round</th><th class="num">Theirs / round</th><th class="num">Your win share</th></tr>' +
      h.opponents.map((r) => recordRow(r)).join("") + recordRow(h.overall, "total");
    $("record-panel").hidden = false;
  }
  if (h.games.length) {
    $("games").innerHTML = '<tr><th>Last move</th><th>Seats and bullheads</th><th>Rules</th><th class="num">Rounds</th>' +
      "<th>Result</th><th></th></tr>" + h.games.map(gameRow).join("");
    $("games-panel").hidden = false;
  }
}

start();
