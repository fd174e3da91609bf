// The play table's page: draws the table the server sends (/api/games/...), animates each turn's placements,
// sends the person's decisions, asks the coach, and drives watched or replayed games. Plain JavaScript, no build
// step, no outside resources. The server validates every request; this page only shows and asks.
"use strict";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// ?anim=MS sets the pause per placed card (0: no animation), e.g. for automated tests.
const ANIM = params.has("anim") ? Math.max(0, Number(params.get("anim")) || 0) : null;

let settings = null;
let gameId = null;
let tab = null;
let table = null; // the latest snapshot from the server
let shownTurn = 0; // id of the last turn drawn
let busy = false; // a request or an animation is running
let coachOn = localStorage.getItem("sixnimmt-coach") === "1";
let advice = null; // {version, data | null, error}
let auto = false;
let autoTimer = null;
let finalDismissed = false;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
const placeMs = () => (ANIM !== null ? ANIM : Number($("speed").value) / 2);
const bullText = (n) => `${n} bullhead${n === 1 ? "" : "s"}`;
const fmt = (x) => (x > 0 ? "+" : x < 0 ? "−" : "±") + Math.abs(x).toFixed(1);

// ------------------------------------------------------------------------------------------------ server

// the server's token (written into the page): every POST carries it, as JSON
const TOKEN = (document.querySelector('meta[name="sixnimmt-token"]') || {}).content || "";

async function api(method, path, body) {
  const opts = {method, headers: {}};
  if (tab) opts.headers["X-Tab"] = tab;
  if (method === "POST") {
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-Sixnimmt-Token"] = TOKEN;
    opts.body = JSON.stringify(body === undefined ? {} : body);
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch (e) {
    const err = new Error("the play server does not answer (was it stopped?): start it again and reload the page");
    err.code = "offline";
    throw err;
  }
  let data = {};
  try {
    data = await res.json();
  } catch (e) {
    data = {};
  }
  if (!res.ok) {
    const err = new Error(data.error || `the server answered ${res.status}`);
    err.status = res.status;
    err.code = data.code || "";
    throw err;
  }
  return data;
}

function showError(message, claim = false) {
  $("error-text").textContent = message;
  $("error-claim").hidden = !claim;
  $("error").hidden = false;
}

function hideError() {
  $("error").hidden = true;
}

async function handleError(e) {
  showError(e.message, e.code === "other_tab");
  if (e.code === "other_tab" || e.code === "not_found" || e.code === "offline" || !gameId) return;
  try {
    const d = await api("GET", `/api/games/${gameId}`); // show the table as it is now
    table = d.table;
    shownTurn = table.last_turn ? table.last_turn.id : 0;
  } catch (e2) {
    /* keep the first error on the page */
  }
}

async function newGame() {
  const body = settings.mode === "replay" ? {record: Number($("record-select").value)} : {};
  stopAuto();
  busy = true;
  try {
    const d = await api("POST", "/api/games", body);
    gameId = d.game;
    tab = d.tab;
    sessionStorage.setItem("tab:" + gameId, tab);
    history.replaceState(null, "", location.pathname + location.search + "#game=" + gameId);
    advice = null;
    finalDismissed = false;
    hideError();
    shownTurn = d.table.last_turn ? d.table.last_turn.id : 0;
    busy = false;
    await show(d.table, false);
  } catch (e) {
    busy = false;
    showError(e.message);
  }
}

async function claim() {
  try {
    const d = await api("POST", `/api/games/${gameId}/claim`);
    tab = d.tab;
    sessionStorage.setItem("tab:" + gameId, tab);
    hideError();
    shownTurn = d.table.last_turn ? d.table.last_turn.id : 0;
    await show(d.table, false);
  } catch (e) {
    showError(e.message);
  }
}

async function act(kind, value) {
  if (busy || !table) return;
  busy = true;
  render(table);
  try {
    const d = await api("POST", `/api/games/${gameId}/act`, {version: table.version, kind, value});
    hideError();
    await show(d.table);
  } catch (e) {
    await handleError(e);
  } finally {
    busy = false;
    render(table);
    loadCoach();
  }
}

async function advance() {
  clearTimeout(autoTimer);
  if (busy || !table) return;
  if (table.phase === "done") {
    stopAuto();
    return;
  }
  busy = true;
  updateControls();
  try {
    const d = await api("POST", `/api/games/${gameId}/advance`, {version: table.version});
    hideError();
    await show(d.table);
  } catch (e) {
    stopAuto();
    await handleError(e);
  } finally {
    busy = false;
    render(table);
  }
  if (auto && table.phase !== "done") autoTimer = setTimeout(advance, Number($("speed").value) / 2);
  if (table.phase === "done") stopAuto();
}

function startAuto() {
  auto = true;
  updateControls();
  advance();
}

function stopAuto() {
  auto = false;
  clearTimeout(autoTimer);
  updateControls();
}

async function loadCoach() {
  if (!coachOn || !table || table.mode !== "play" || busy) return;
  const d = table.decision;
  if (!d || (d.kind !== "card" && d.kind !== "row")) return;
  const v = table.version;
  if (advice && advice.version === v) return;
  advice = {version: v, data: null, error: null};
  renderCoachNote();
  try {
    const res = await api("GET", `/api/games/${gameId}/coach?version=${v}`);
    if (advice.version === v) advice = {version: v, data: res.advice, error: null};
  } catch (e) {
    if (advice.version === v) advice = {version: v, data: null, error: e.message};
  }
  if (table.version === v && !busy) render(table);
}

// ------------------------------------------------------------------------------------------------ drawing

function cardHtml(c, cls = "", tag = "div", attrs = "") {
  const b = settings.bullheads[c];
  const bulls = '<svg><use href="#bull"/></svg>'.repeat(b);
  const title = `${c}: ${bullText(b)}`;
  return `<${tag} class="card ${cls}" data-b="${b}" title="${title}" ${attrs}>` +
    `<span class="bulls">${bulls}</span><span class="val">${c}</span></${tag}>`;
}

function rowBulls(row) {
  return row.reduce((s, c) => s + settings.bullheads[c], 0);
}

function coachFor(kind) {
  if (!coachOn || !advice || !table || advice.version !== table.version || !advice.data) return null;
  return advice.data.kind === kind ? advice.data : null;
}

function renderRows(rows, flash = null, newCard = null) {
  const d = table.decision;
  const choosing = !busy && d && d.kind === "row";
  const rowAdvice = choosing ? coachFor("row") : null;
  $("rows").innerHTML = rows.map((row, r) => {
    const full = row.length >= 5;
    const cls = ["row"];
    if (full) cls.push("full");
    if (choosing) cls.push("choosable");
    if (rowAdvice && rowAdvice.best === r) cls.push("best-row");
    if (flash && flash.row === r) cls.push(flash.kind === "placed" ? "flash-place" : "flash-take");
    const pips = [0, 1, 2, 3, 4].map((i) => `<span class="pip ${i < row.length ? "on" : ""}"></span>`).join("");
    const label = `<div class="row-label"><b>Row ${r + 1}</b>${bullText(rowBulls(row))}<div class="pips">${pips}</div></div>`;
    let cells = "";
    for (let i = 0; i < 5; i++) {
      if (i < row.length) cells += cardHtml(row[i], newCard === row[i] ? "new" : "");
      else cells += '<div class="slot"></div>';
    }
    cells += '<div class="slot sixth"></div>';
    let side = "";
    if (choosing) side += `<span class="take-hint">take: ${bullText(rowBulls(row))}</span>`;
    if (rowAdvice) {
      const x = rowAdvice.expected[r];
      const b = rowAdvice.bullheads[r];
      side += `<span class="coach-row ${rowAdvice.best === r ? "best" : ""}" title="yours minus the others' average: ${fmt(x)}">` +
        `${rowAdvice.best === r ? "★ " : ""}${b.toFixed(1)}</span>`;
    }
    const attrs = choosing ? ` data-row="${r}" role="button" tabindex="0"` : ` data-row-index="${r}"`;
    return `<div class="${cls.join(" ")}"${attrs}>${label}${cells}<div class="row-side">${side}</div></div>`;
  }).join("");
}

function renderReveal(t, turn = null, upto = null) {
  const el = $("reveal");
  const me = t.human;
  if (turn) {
    // a turn being told: every card revealed, placed lowest first (upto: index of the placement being shown)
    const order = turn.placements;
    const done = upto === null ? order.length : upto + 1;
    const bySeat = {};
    order.forEach((p, i) => { bySeat[p.seat] = {p, i}; });
    let html = "";
    const seats = turn.cards.map((c, s) => s).sort((a, b) => turn.cards[a] - turn.cards[b]);
    for (const s of seats) {
      const {p, i} = bySeat[s];
      let what = "";
      if (i < done) what = p.kind === "placed" ? `→ row ${p.row + 1}` : `takes ${bullText(p.bullheads)}`;
      const cls = upto !== null && i === upto ? "placing" : "";
      html += `<div class="played ${s === me ? "me" : ""}"><div class="who">${esc(t.names[s])}</div>` +
        `${cardHtml(turn.cards[s], cls)}<div class="what">${what}</div></div>`;
    }
    el.innerHTML = html;
    return;
  }
  if (t.phase === "choose_row" && t.pending) {
    const cards = t.pending.cards;
    const seats = cards.map((c, s) => s).sort((a, b) => cards[a] - cards[b]);
    el.innerHTML = seats.map((s) => `<div class="played ${s === me ? "me" : ""}"><div class="who">${esc(t.names[s])}</div>` +
      `${cardHtml(cards[s], s === t.pending.chooser ? "placing" : "")}<div class="what">${s === t.pending.chooser ? "lowest: picks a row" : "waits"}</div></div>`).join("");
    return;
  }
  if (t.phase === "draft") {
    const d = t.decision;
    const mine = d && d.kind === "draft" && !busy;
    const cards = t.display.map((c) => (mine ? cardHtml(c, "", "button", `type="button" data-draft="${c}"`) : cardHtml(c))).join("");
    el.innerHTML = `<div class="caption">Open display (${t.display.length} cards): ${mine ? "take a card." : esc(t.status)}</div><div class="display">${cards}</div>`;
    return;
  }
  const last = t.last_turn;
  if (last && last.round === t.round && (!last.round_over || t.phase === "done")) {
    renderReveal(t, last, null);
    return;
  }
  el.innerHTML = '<div class="hint">The cards of each turn are revealed here, then placed from the lowest up.</div>';
}

function renderHand(t) {
  const play = t.mode === "play";
  $("hand-area").hidden = !play;
  $("hands").hidden = play;
  if (!play) {
    $("hands").innerHTML = t.names.map((name, s) => {
      const cards = (t.hands[String(s)] || []).map((c) => cardHtml(c)).join("");
      return `<div class="seat-hand"><div class="name" title="${esc(t.specs[s])}">${esc(name)}</div><div class="cards">${cards || '<span class="hint">—</span>'}</div></div>`;
    }).join("");
    return;
  }
  const hand = t.hands[String(t.human)] || [];
  const d = t.decision;
  const canPlay = !busy && d && d.kind === "card";
  const cardAdvice = canPlay ? coachFor("card") : null;
  const lo = cardAdvice ? Math.min(...cardAdvice.expected) : 0;
  $("hand").innerHTML = hand.map((c) => {
    let ev = "";
    let cls = "";
    if (cardAdvice) {
      const i = cardAdvice.options.indexOf(c);
      const x = cardAdvice.expected[i];
      const best = cardAdvice.best === c;
      // within a bullhead of the best: green; three or more worse: red
      const tone = best ? "best" : x - lo <= 1 ? "good" : x - lo >= 3 ? "bad" : "";
      const b = cardAdvice.bullheads[i];
      ev = `<span class="ev ${tone}" data-ev="${c}" title="yours minus the others' average: ${fmt(x)}">` +
        `${best ? "★ " : ""}${b.toFixed(1)}</span>`;
      if (best) cls = "best";
    } else {
      ev = '<span class="ev"></span>';
    }
    const attrs = `type="button" data-card="${c}"${canPlay ? "" : " disabled"}`;
    return `<div class="slotcard">${cardHtml(c, cls, "button", attrs)}${ev}</div>`;
  }).join("");
  const title = d && d.kind === "card" ? "Your hand: click a card to play it" : "Your hand";
  $("hand-title").innerHTML = `<span>${title}</span><span>${hand.length} card${hand.length === 1 ? "" : "s"}</span>`;
  renderCoachNote();
}

function renderCoachNote() {
  const note = $("coach-note");
  if (!coachOn || !table || table.mode !== "play") {
    note.hidden = true;
    return;
  }
  note.hidden = false;
  const d = table.decision;
  if (!d || (d.kind !== "card" && d.kind !== "row")) {
    note.textContent = "Coach: advice appears when you choose a card or a row.";
  } else if (!advice || advice.version !== table.version || (!advice.data && !advice.error)) {
    note.textContent = "Coach: searching…";
  } else if (advice.error) {
    note.textContent = `Coach: ${advice.error}`;
  } else {
    const what = advice.data.kind === "card" ? "card" : "row";
    note.textContent = `Coach (mc:${advice.data.samples}): the bullheads you can expect to take from now to the ` +
      `end of the round with each ${what}; ★ is the search's choice (it ranks by yours minus the others' ` +
      `average, shown when you point at a figure).`;
  }
}

function renderScores(t) {
  const last = t.last_turn;
  const fresh = last && last.id === shownTurn ? last.penalties : null;
  const end = t.config.end_score || Math.max(1, ...t.totals);
  let deciding = -1;
  if (t.phase === "choose_row" || t.phase === "draft") deciding = t.chooser;
  else if (t.phase === "select" && t.mode === "play") deciding = t.human;
  const rows = t.names.map((name, s) => {
    const gain = fresh && fresh[s] > 0 ? `+${fresh[s]}` : "";
    const pct = Math.min(100, (100 * t.totals[s]) / end);
    const cls = [s === t.human ? "me" : "", s === deciding ? "deciding" : ""].join(" ");
    return `<tr class="${cls}"><td class="name" title="${esc(t.specs[s])}">${esc(name)}</td>` +
      `<td class="gain">${gain}</td><td>${t.round_penalties[s]}</td>` +
      `<td class="total" data-total="${s}">${t.totals[s]}<div class="meter"><i style="width:${pct}%"></i></div></td></tr>`;
  }).join("");
  $("scores").innerHTML = `<tr><th>Player</th><th title="bullheads taken in the last turn">turn</th><th>round</th><th>total</th></tr>${rows}`;
}

function renderLog(t) {
  const items = t.log.slice().reverse().map((line) => {
    const cls = /^Round \d+/.test(line) || /^Game over/.test(line) ? "round" : / takes /.test(line) && !/from the display/.test(line) ? "take" : "";
    return `<li class="${cls}">${esc(line)}</li>`;
  });
  $("log").innerHTML = items.join("");
}

function renderInfo(t) {
  const c = t.config;
  const parts = [`<span>Round <b>${t.round}</b></span>`];
  if (t.phase !== "draft") parts.push(`<span>Turn <b>${Math.min(t.turn + (t.phase === "done" ? 0 : 1), 10)}</b>/10</span>`);
  parts.push(`<span>${c.episode === "round" ? "one round" : `game to <b>${c.end_score}</b>`}</span>`);
  parts.push(`<span>${c.num_players} players · ${c.variant}</span>`);
  const mode = {play: "you play", watch: "watching agents", replay: "replay"}[t.mode];
  parts.push(`<span>${mode}</span>`);
  $("info").innerHTML = parts.join("");
}

function renderFinal(t) {
  if (!t.ranking || finalDismissed) {
    $("final").hidden = true;
    return;
  }
  const rounds = t.rounds.length;
  const head = rounds > 1 ? t.rounds.map((r) => `<th>R${r.round}</th>`).join("") : "";
  const body = t.ranking.map((r) => {
    const per = rounds > 1 ? t.rounds.map((x) => `<td>${x.penalties[r.seat]}</td>`).join("") : "";
    return `<tr class="${r.place === 1 ? "winner" : ""}"><td>${r.place}.</td><td>${esc(r.name)}</td>${per}<td data-final="${r.seat}"><b>${r.total}</b></td></tr>`;
  }).join("");
  $("ranking").innerHTML = `<tr><th></th><th>Player</th>${head}<th>Bullheads</th></tr>${body}`;
  $("final-title").textContent = t.status;
  $("final").hidden = false;
}

function setStatus(text, cls = "") {
  const el = $("status");
  el.textContent = text;
  el.className = "status " + cls;
}

function render(t) {
  if (!t) return;
  renderInfo(t);
  const d = t.decision;
  setStatus(t.status, d && !busy ? "you" : "");
  renderRows(t.rows);
  renderReveal(t);
  renderHand(t);
  renderScores(t);
  renderLog(t);
  renderFinal(t);
  updateControls();
}

function updateControls() {
  const watched = table ? table.mode !== "play" : settings && settings.mode !== "play";
  $("watch-controls").hidden = false;
  $("step-btn").hidden = !watched;
  $("auto-btn").hidden = !watched;
  $("coach-toggle").hidden = watched;
  const over = !table || table.phase === "done";
  $("step-btn").disabled = busy || auto || over;
  $("auto-btn").disabled = over;
  $("auto-btn").textContent = auto ? "Pause ❚❚" : "Play ▶";
}

async function animateTurn(turn, t) {
  const ms = placeMs();
  renderRows(turn.rows_before);
  renderReveal(t, turn, -1);
  setStatus(`Turn ${turn.turn}: every card is revealed, then placed from the lowest up.`);
  if (ms) await sleep(ms * 1.3);
  for (let i = 0; i < turn.placements.length; i++) {
    const p = turn.placements[i];
    renderReveal(t, turn, i);
    renderRows(p.rows, {row: p.row, kind: p.kind}, p.card);
    setStatus(p.text, p.kind === "placed" ? "" : "take");
    if (ms) await sleep(p.kind === "placed" ? ms : ms * 2.2);
  }
  if (turn.round_over) {
    const list = turn.round_penalties.map((x, s) => `${t.names[s]} ${x}`).join(", ");
    setStatus(`Round ${turn.round} is over. Bullheads this round: ${list}.`);
    if (ms) await sleep(ms * 3);
  }
}

async function show(t, animate = true) {
  const turn = t.last_turn;
  if (animate && turn && turn.id > shownTurn) {
    const wasBusy = busy;
    busy = true;
    table = t;
    renderHand(t);
    renderInfo(t);
    await animateTurn(turn, t);
    busy = wasBusy;
  }
  table = t;
  shownTurn = turn ? turn.id : 0;
  if (t.record && t.record.index !== null) $("record-select").value = String(t.record.index);
  render(t);
  loadCoach();
}

// ------------------------------------------------------------------------------------------------ events

function setup() {
  document.addEventListener("click", (ev) => {
    const card = ev.target.closest("button[data-card]");
    if (card && !card.disabled) return act("card", Number(card.dataset.card));
    const row = ev.target.closest("[data-row]");
    if (row) return act("row", Number(row.dataset.row));
    const draft = ev.target.closest("button[data-draft]");
    if (draft) return act("draft", Number(draft.dataset.draft));
    return undefined;
  });
  document.addEventListener("keydown", (ev) => {
    const row = ev.target.closest && ev.target.closest("[data-row]");
    if (row && (ev.key === "Enter" || ev.key === " ")) act("row", Number(row.dataset.row));
  });
  $("new-btn").addEventListener("click", newGame);
  $("final-new").addEventListener("click", newGame);
  $("final-close").addEventListener("click", () => {
    finalDismissed = true;
    $("final").hidden = true;
  });
  $("error-close").addEventListener("click", hideError);
  $("error-claim").addEventListener("click", claim);
  $("step-btn").addEventListener("click", advance);
  $("auto-btn").addEventListener("click", () => (auto ? stopAuto() : startAuto()));
  $("coach-box").checked = coachOn;
  $("coach-box").addEventListener("change", () => {
    coachOn = $("coach-box").checked;
    localStorage.setItem("sixnimmt-coach", coachOn ? "1" : "0");
    if (table) render(table);
    loadCoach();
  });
  if (settings.mode === "replay") {
    const sel = $("record-select");
    sel.hidden = false;
    sel.innerHTML = settings.records.map((r) => `<option value="${r.index}">${esc(r.label)}</option>`).join("");
    sel.addEventListener("change", newGame);
    $("new-btn").textContent = "Restart";
  }
}

async function start() {
  try {
    settings = await api("GET", "/api/settings");
  } catch (e) {
    showError(`cannot reach the play server: ${e.message}`);
    return;
  }
  setup();
  const m = location.hash.match(/game=([\w-]+)/);
  if (m) {
    gameId = m[1];
    tab = sessionStorage.getItem("tab:" + gameId);
    try {
      const d = await api("GET", `/api/games/${gameId}`);
      shownTurn = d.table.last_turn ? d.table.last_turn.id : 0;
      await show(d.table, false);
      return;
    } catch (e) {
      if (e.code === "other_tab") {
        showError(e.message, true);
        return;
      }
    }
  }
  if (await openSaved()) return; // saved.js: ?continue=, ?replay=, or the offer to continue unfinished games
  await newGame();
}

start();
