// Saved games at the table (loaded before table.js, whose globals it uses when called): the page opened with
// ?replay=ID replays a finished saved game, with ?continue=ID continues an unfinished one, and otherwise offers
// to continue the unfinished games a restarted server holds. Adds the History button to the header.
"use strict";

// Show game `id` (held by `tabToken`) in this tab, as if it had been started here.
async function adoptGame(id, tabToken, t) {
  gameId = id;
  tab = tabToken;
  sessionStorage.setItem("tab:" + gameId, tab);
  history.replaceState(null, "", location.pathname + "#game=" + gameId);
  advice = null;
  finalDismissed = false;
  hideError();
  shownTurn = t.last_turn ? t.last_turn.id : 0;
  await show(t, false);
}

async function continueGame(id) {
  const d = await api("POST", `/api/games/${encodeURIComponent(id)}/claim`);
  await adoptGame(id, d.tab, d.table);
}

function offerHtml(games) {
  const items = games.map((g) => {
    const seats = g.names.map((n, s) => `${esc(n)} ${g.totals[s]}`).join(", ");
    const when = new Date(g.updated * 1000).toLocaleString([], {dateStyle: "medium", timeStyle: "short"});
    return `<tr><td>${esc(when)}</td><td>round ${g.rounds}</td><td>${seats}</td>` +
      `<td><button type="button" data-continue="${esc(g.id)}">Continue</button></td></tr>`;
  }).join("");
  const n = games.length;
  return `<div class="final-card"><h2>${n} unfinished game${n === 1 ? "" : "s"}</h2>` +
    `<p>The server kept ${n === 1 ? "this game" : "these games"}: continue where you left off, or start a new one.</p>` +
    `<div style="max-height:50vh;overflow:auto"><table class="ranking" id="unfinished">${items}</table></div>` +
    '<div class="final-actions"><button type="button" id="offer-new">New game</button></div></div>';
}

// Returns true if it opened a saved game or the offer (the page then starts no new game itself).
async function openSaved() {
  if (!settings.saving) return false;
  const link = document.createElement("button");
  link.type = "button";
  link.id = "history-btn";
  link.textContent = "History";
  link.addEventListener("click", () => { location.href = "/history"; });
  $("new-btn").before(link);
  const replayId = params.get("replay");
  const continueId = params.get("continue");
  try {
    if (replayId) {
      const d = await api("POST", "/api/games", {saved: replayId});
      await adoptGame(d.game, d.tab, d.table);
      return true;
    }
    if (continueId) {
      await continueGame(continueId);
      return true;
    }
    const {games} = await api("GET", "/api/unfinished");
    if (!games.length) return false;
    const box = document.createElement("div");
    box.className = "overlay";
    box.id = "offer";
    box.innerHTML = offerHtml(games);
    document.body.append(box);
    box.addEventListener("click", async (ev) => {
      const b = ev.target.closest("button");
      if (!b) return;
      box.remove();
      if (b.id === "offer-new") return newGame();
      try {
        await continueGame(b.dataset.continue);
      } catch (e) {
        showError(e.message);
      }
      return undefined;
    });
    return true;
  } catch (e) {
    showError(e.message);
    return true;
  }
}
