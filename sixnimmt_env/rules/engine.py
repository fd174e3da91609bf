"""The pure rules engine of *6 nimmt!* (`RULES.md` R1-R14, V1, V2).

A game is a small immutable :class:`State` (a ``NamedTuple`` of tuples and
ints) plus pure functions: :func:`new_game` and :func:`from_position` build a
state, :func:`legal_actions` lists what a seat may do, :func:`step` applies one
joint action (one action per seat, all at once: the game is simultaneous,
`RULES.md` R5) and returns a new state with the bullheads each seat took;
:func:`step_unchecked` does the same without validating the actions, for
trusted loops that draw them from :func:`legal_actions`.
:func:`resolve_turn` is the one turn resolver (R6-R9): ``step`` places every
turn through it, and it tells what each card did (:class:`Placement`) to the
narrators (:mod:`sixnimmt_env.render`, :mod:`sixnimmt_env.records`, the play
table).
Randomness is only ever drawn from the ``numpy.random.Generator`` passed in.

This module imports neither PettingZoo, Gymnasium nor torch; the environments
in :mod:`sixnimmt_env.pettingzoo_env` and :mod:`sixnimmt_env.gym_env` are thin shells
around it.

Action encoding (shared with every environment, stable):

============  =========================================================
``0..103``    the card ``a + 1``: play it (select), or take it from the
              open display (logic-variant draft)
``104..107``  take row ``a - 104`` (the low-card choice, R9)
``108``       no-op: the only legal action of a seat with no decision
============  =========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import pairwise
from typing import Any, Literal, NamedTuple, cast

import numpy as np

NUM_CARDS = 104
"""Cards in the full deck, valued 1..104 (R1)."""
NUM_ROWS = 4
"""Rows on the table (R3)."""
ROW_LIMIT = 5
"""A row holding this many cards is full; the next card takes it (R8)."""
HAND_SIZE = 10
"""Cards dealt to each player per round (R3)."""
MIN_PLAYERS, MAX_PLAYERS = 2, 10
"""Allowed player counts (R3)."""
ROW_ACTION = 104
"""Action ``ROW_ACTION + r`` takes row ``r`` (R9)."""
NOOP = 108
"""The no-op action."""
NUM_ACTIONS = 109
"""Size of the action space."""

SELECT, CHOOSE_ROW, DRAFT, DONE = "select", "choose_row", "draft", "done"
PHASES = (SELECT, CHOOSE_ROW, DRAFT, DONE)
"""Phases of a state: everyone picks a card at once (R5); one player picks the
row its low card takes (R9); one player takes a card from the open display
(V2); the game is over."""

_NOOP_ONLY = (NOOP,)
_ROWS = tuple(range(NUM_ROWS))
_ZEROS = tuple((0,) * n for n in range(MAX_PLAYERS + 1))
_SEAT_RANGES = tuple(tuple(range(n)) for n in range(MAX_PLAYERS + 1))
_ROW_CHOICES = tuple(
    tuple(tuple(_ROWS if s == chooser else (NOOP - ROW_ACTION,) for s in range(n)) for chooser in range(n))
    for n in range(MAX_PLAYERS + 1)
)
"""``choices`` in ``choose_row``, by player count and chooser: the chooser's rows, the others' no-op."""
_ROW_SHIFT = -ROW_ACTION
_ROW_ACTIONS = tuple([r + ROW_ACTION for r in _ROWS])
_NO_CHOICES = tuple(((),) * n for n in range(MAX_PLAYERS + 1))
_NOOP_DRAFT = (NOOP + 1,)


def _bullheads(card: int) -> int:
    if card == 55:
        return 7
    if card % 11 == 0:
        return 5
    if card % 10 == 0:
        return 3
    if card % 5 == 0:
        return 2
    return 1


BULLHEADS: tuple[int, ...] = (0, *(_bullheads(c) for c in range(1, NUM_CARDS + 1)))
"""``BULLHEADS[c]`` is the penalty of card ``c`` in bullheads (R2); index 0 is unused."""
_BULLHEADS_OF = BULLHEADS.__getitem__


def bullheads(card: int) -> int:
    """Bullheads (penalty points) of one card 1..104 (`RULES.md` R2).

    55 carries 7; other multiples of 11 carry 5; other multiples of 10 carry 3;
    other multiples of 5 carry 2; every other card 1.

    Raises:
        ValueError: if ``card`` is not in 1..104.
    """
    if not 1 <= card <= NUM_CARDS:
        raise ValueError(f"card {card!r} is outside the deck 1..{NUM_CARDS}")
    return BULLHEADS[card]


def row_bullheads(row: Sequence[int]) -> int:
    """Total bullheads of the cards in ``row`` (R2, R8, R9)."""
    return sum(map(_BULLHEADS_OF, row))


_CHOICES = {
    "variant": ("standard", "tactics", "logic"),
    "row_choice": ("player", "cheapest"),
    "end_rule": ("at_least", "more_than"),
    "episode": ("game", "round"),
}


@dataclass(frozen=True)
class GameConfig:
    """The rules in force for one game (`RULES.md`); every field is validated.

    Attributes:
        num_players: 2..10 players (R3).
        variant: ``"standard"`` (cards 1..104), ``"tactics"`` (cards
            1..10*players+4, V1) or ``"logic"`` (tactics deck drafted face up,
            V2).
        row_choice: ``"player"``: the owner of a low card chooses the row it
            takes, a real decision (R9b default); ``"cheapest"``: the engine
            takes the row with the fewest bullheads, ties to the lowest index.
        end_score: the game ends after a round in which some total reaches it
            (R12, default 66 bullheads); ``None`` disables this end.
        end_rule: ``"at_least"`` (total >= end_score, default) or
            ``"more_than"`` (total > end_score) (R12).
        max_rounds: if set, the game also ends after this many rounds (R12's
            fixed-number-of-rounds option; with ``end_score=None`` it is the
            only end).
        episode: ``"game"`` (an episode is a whole game, default) or
            ``"round"`` (an episode is a single round).

    Raises:
        ValueError: naming the field, the value and what is allowed.
    """

    num_players: int = 4
    variant: Literal["standard", "tactics", "logic"] = "standard"
    row_choice: Literal["player", "cheapest"] = "player"
    end_score: int | None = 66
    end_rule: Literal["at_least", "more_than"] = "at_least"
    max_rounds: int | None = None
    episode: Literal["game", "round"] = "game"

    def __post_init__(self) -> None:
        n = self.num_players
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or not MIN_PLAYERS <= n <= MAX_PLAYERS:
            raise ValueError(f"num_players must be an integer {MIN_PLAYERS}..{MAX_PLAYERS} (RULES.md R3), got {n!r}")
        object.__setattr__(self, "num_players", int(n))
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
        for name in ("end_score", "max_rounds"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.end_score is None and self.max_rounds is None and self.episode == "game":
            raise ValueError(
                "end_score and max_rounds cannot both be None when episode='game': the game would never end"
            )

    @property
    def deck_size(self) -> int:
        """Highest card in play: 104, or 10 * num_players + 4 in the tactics and logic variants (V1, V2)."""
        if self.variant == "standard":
            return NUM_CARDS
        return HAND_SIZE * self.num_players + NUM_ROWS

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of every config field, e.g. for keyword validation."""
        return tuple(f.name for f in fields(cls))


class State(NamedTuple):
    """An immutable game state. Build it with :func:`new_game` or :func:`from_position`.

    Attributes:
        config: the rules in force.
        phase: ``"select"``, ``"choose_row"``, ``"draft"`` or ``"done"``.
        hands: per seat, its cards 1..104 sorted ascending (private, R4).
        rows: the 4 rows, each 1..5 cards ascending (empty during the draft).
        piles: per seat, the cards taken into its penalty pile this round.
        round_penalties: per seat, bullheads taken this round (R11).
        totals: per seat, game totals in bullheads, this round included (R12).
        stock: cards out of play this round, sorted (R3; hidden, R4).
        display: the open draft display, sorted (V2; empty otherwise).
        revealed: per seat, the card it revealed in the current turn while a
            low-card row choice is pending, else in the last completed turn of
            this round; 0 before the first turn of a round (R5, R9a).
        chooser: the seat that must choose a row (``choose_row``) or pick a
            card (``draft``); -1 in the other phases.
        turn: turns completed in this round, 0..10 (R11).
        round: rounds completed before this one, 0-based (R12).
        drafted: per seat, the cards it took from the display in this round's draft, sorted (V2; public, R4:
            every pick is made face up). They stay listed after they are played; empty in the other variants.
    """

    config: GameConfig
    phase: str
    hands: tuple[tuple[int, ...], ...]
    rows: tuple[tuple[int, ...], ...]
    piles: tuple[tuple[int, ...], ...]
    round_penalties: tuple[int, ...]
    totals: tuple[int, ...]
    stock: tuple[int, ...]
    display: tuple[int, ...]
    revealed: tuple[int, ...]
    chooser: int
    turn: int
    round: int
    drafted: tuple[tuple[int, ...], ...]

    @property
    def done(self) -> bool:
        """Whether the game (or the round, with ``episode="round"``) is over."""
        return self.phase == DONE


def _new_state(fields: tuple[Any, ...]) -> State:
    """``State(*fields)`` without the generated ``__new__`` frame (about 2x faster); for the hot path."""
    return tuple.__new__(State, fields)


class IllegalActionError(ValueError):
    """An action that is not legal for its seat in the current state.

    Attributes:
        seat: the offending seat.
        action: the action given.
        legal: the legal actions of that seat.
        agent: who played the seat, if the caller knows (e.g. ``"greedy in game 17"``), else ``None``.
    """

    def __init__(self, seat: int, action: object, legal: Sequence[int], phase: str, agent: str | None = None) -> None:
        self.seat, self.action, self.legal, self.agent = seat, action, tuple(legal), agent
        who = f"seat {seat}" if agent is None else f"{agent} (seat {seat})"
        super().__init__(f"{who}: action {action!r} is not legal in phase {phase!r}; legal actions: {list(legal)}")


# --------------------------------------------------------------------------- set-up


_DECKS = {
    size: np.arange(1, size + 1)
    for size in {NUM_CARDS, *(HAND_SIZE * n + NUM_ROWS for n in range(MIN_PLAYERS, MAX_PLAYERS + 1))}
}
"""The cards 1..size of every deck size in use (V1), shuffled by copy in :func:`_deal`."""
for _deck in _DECKS.values():
    _deck.setflags(write=False)


def _deal(config: GameConfig, rng: np.random.Generator, totals: tuple[int, ...], round_index: int) -> State:
    """Set up a round (R3, R14; V1, V2): the whole deck is shuffled anew (or laid out for the draft).

    The deck is ``rng.permutation`` of the cards in play, laid out by :func:`_lay_out`.
    """
    if config.variant == "logic":  # V2: no shuffle; the first picker rotates with the round
        n = config.num_players
        zeros, empty = _ZEROS[n], ((),) * n
        display = tuple(range(1, config.deck_size + 1))
        first = round_index % n
        return State(config, DRAFT, empty, (), empty, zeros, totals, (), display, zeros, first, 0, round_index, empty)
    return _lay_out(config, rng.permutation(_DECKS[config.deck_size]), totals, round_index)


def _lay_out(config: GameConfig, deck: np.ndarray, totals: tuple[int, ...], round_index: int) -> State:
    """The round dealt from ``deck`` (distinct cards of the deck, in deal order; not checked), R3.

    Hands of 10 cards to seats 0, 1, ... in order, then the 4 row cards; every other card of the deck is the
    unused stock.
    """
    n = config.num_players
    zeros = _ZEROS[n]
    empty = ((),) * n
    k = n * HAND_SIZE
    hands = tuple(map(tuple, np.sort(deck[:k].reshape(n, HAND_SIZE), axis=1).tolist()))
    rows = tuple([(c,) for c in deck[k : k + NUM_ROWS].tolist()])
    size = config.deck_size
    rest = deck[k + NUM_ROWS :] if len(deck) == size else np.setdiff1d(_DECKS[size], deck[: k + NUM_ROWS])
    stock = tuple(np.sort(rest).tolist())
    return State(config, SELECT, hands, rows, empty, zeros, totals, stock, (), zeros, -1, 0, round_index, empty)


def deal_round(
    config: GameConfig, cards: Sequence[int], totals: Sequence[int] | None = None, round_index: int = 0
) -> State:
    """Deal a round from cards in deal order (R3), as :func:`new_game` deals its shuffled deck.

    Seat 0 gets the first 10 cards, seat 1 the next 10, ...; the 4 cards after the hands start the rows; every
    other card of the deck (1..deck size, V1) is the unused stock.

    Args:
        config: the rules in force; not the logic variant (V2 drafts its hands: :func:`new_game`).
        cards: at least ``10 * num_players + 4`` distinct cards of the deck, in deal order (e.g. a chance
            player's draws); cards past those are ignored (they are in the stock).
        totals: game totals per seat in bullheads before this round (default 0).
        round_index: rounds completed before this one.

    Returns:
        A state in phase ``"select"``.

    Raises:
        ValueError: the logic variant, too few cards, a card outside the deck or a card dealt twice.
    """
    if config.variant == "logic":
        raise ValueError("the logic variant drafts its hands (V2): start it with new_game")
    n = config.num_players
    need = n * HAND_SIZE + NUM_ROWS
    dealt = _ints(cards, "cards")[:need]
    if len(dealt) < need:
        raise ValueError(f"a deal needs {need} cards (10 per player and 4 rows), got {len(dealt)}")
    outside = [c for c in dealt if not 1 <= c <= config.deck_size]
    if outside:
        raise ValueError(f"cards {outside} are outside the deck 1..{config.deck_size}")
    if len(set(dealt)) != need:
        raise ValueError(f"duplicate cards in the deal: {sorted({c for c in dealt if dealt.count(c) > 1})}")
    tot = (0,) * n if totals is None else _ints(totals, "totals", "bullhead totals")
    if len(tot) != n:
        raise ValueError(f"totals must hold one total per seat ({n}), got {list(tot)}")
    return _lay_out(config, np.array(dealt, np.int64), tot, int(round_index))


def new_game(config: GameConfig, rng: np.random.Generator) -> State:
    """Deal the first round of a new game (R3; V1, V2).

    Args:
        config: the rules in force.
        rng: the only source of randomness (the deck shuffle).

    Returns:
        A state in phase ``"select"`` (``"draft"`` in the logic variant).
    """
    return _deal(config, rng, (0,) * config.num_players, 0)


def _ints(value: object, what: str, kind: str = "card values") -> tuple[int, ...]:
    """``value`` as a tuple of plain ints, else a ``ValueError`` naming ``what``."""
    try:
        items = tuple(cast("Iterable[object]", value))  # anything else: the TypeError below
    except TypeError:
        raise ValueError(f"{what} must be a list of {kind}, got {value!r}") from None
    out = []
    for c in items:
        if isinstance(c, bool) or not isinstance(c, int | np.integer):
            raise ValueError(f"{what} must be a list of {kind}, but holds {c!r}, which is not an integer")
        out.append(int(c))
    return tuple(out)


def from_position(
    config: GameConfig,
    hands: Sequence[Sequence[int]],
    rows: Sequence[Sequence[int]] = (),
    totals: Sequence[int] | None = None,
    display: Sequence[int] | None = None,
    round_index: int = 0,
    drafted: Sequence[Sequence[int]] | None = None,
) -> State:
    """Build a state from an explicit position (copies every list given).

    Args:
        config: the rules in force.
        hands: one list of cards per seat, all of the same length 1..10 (in a
            draft position, lengths may differ by one and may be 0).
        rows: four ascending rows of 1..5 cards each (empty in a draft position).
        totals: game totals per seat in bullheads before this round (default 0).
        display: the open draft display (logic variant only, V2); when given,
            the state is in phase ``"draft"``.
        round_index: rounds completed before this one (sets the draft's first
            player, V2).
        drafted: logic variant only (V2): per seat, the cards it took in this
            round's draft, including those it has played since. Default: each
            seat's hand (every card a seat holds in the logic variant is one it
            drafted); empty in the other variants.

    Returns:
        A state in phase ``"select"`` (or ``"draft"``). Cards in neither a
        hand, a row nor the display form the unused stock.

    Raises:
        ValueError: saying what is wrong: wrong number of hands or rows, a card
            outside the deck, a duplicate card, a row not ascending or longer
            than 5, hands of unequal length, bad totals, a bad round index,
            draft picks outside the logic variant, a pick by two seats, a held
            card its holder did not draft, or a pick still on the display.
    """
    n = config.num_players
    try:
        count = len(hands)
    except TypeError:
        raise ValueError(f"hands must be a list of {n} lists of cards (num_players={n}), got {hands!r}") from None
    if count != n:
        raise ValueError(f"expected {n} hands (num_players={n}), got {count}")
    if isinstance(round_index, bool) or not isinstance(round_index, int | np.integer) or round_index < 0:
        raise ValueError(f"round_index must be a non-negative integer, got {round_index!r}")
    round_index = int(round_index)
    hand_t = tuple(tuple(sorted(_ints(h, f"hand of seat {i}"))) for i, h in enumerate(hands))
    row_t = tuple(_ints(r, f"row {i}") for i, r in enumerate(rows))
    disp = tuple(sorted(_ints(display, "display"))) if display is not None else None
    if totals is None:
        tot = (0,) * n
    else:
        tot = _ints(totals, "totals", "bullhead totals")
        if len(tot) != n or any(t < 0 for t in tot):
            raise ValueError(f"totals must be {n} non-negative integers (one per seat), got {list(totals)}")
    deck_size = config.deck_size
    everything = [c for h in hand_t for c in h] + [c for r in row_t for c in r] + list(disp or ())
    for c in everything:
        if not 1 <= c <= deck_size:
            raise ValueError(f"card {c} is outside the deck 1..{deck_size} (variant {config.variant!r})")
    if len(set(everything)) != len(everything):
        dupes = sorted({c for c in everything if everything.count(c) > 1})
        raise ValueError(f"duplicate cards in the position: {dupes}")
    lengths = [len(h) for h in hand_t]
    zeros = (0,) * n
    empty = ((),) * n
    if disp is not None:
        if config.variant != "logic":
            raise ValueError(f"a draft display needs variant='logic', got variant={config.variant!r}")
        if row_t:
            raise ValueError("rows must be empty during the draft (V2): the 4 cards left start the rows")
        if max(lengths) - min(lengths) > 1 or max(lengths) > HAND_SIZE:
            raise ValueError(
                f"draft hands must differ in length by at most one and hold at most 10, got lengths {lengths}"
            )
        if len(disp) != NUM_ROWS + sum(HAND_SIZE - k for k in lengths):
            raise ValueError(
                f"the display must hold 4 cards plus the cards still to be drafted "
                f"({NUM_ROWS + sum(HAND_SIZE - k for k in lengths)}), got {len(disp)}"
            )
        picks = sum(lengths)
        chooser = (round_index + picks) % n
        expected = [(picks // n) + (1 if (s - round_index) % n < picks % n else 0) for s in range(n)]
        if lengths != expected:
            raise ValueError(
                f"draft hand lengths {lengths} do not fit the pick order (seat {round_index % n} first, V2); "
                f"expected {expected}"
            )
        if len(disp) == NUM_ROWS:
            raise ValueError("a display of only 4 cards means the draft is over: give those cards as rows instead")
        stock = tuple(sorted(set(range(1, deck_size + 1)) - set(everything)))
        picked = _drafted(config, drafted, hand_t, disp)  # = the hands: a pick is in its hand or on the display
        return State(config, DRAFT, hand_t, (), empty, zeros, tot, stock, disp, zeros, chooser, 0, round_index, picked)
    if len(row_t) != NUM_ROWS:
        raise ValueError(f"expected {NUM_ROWS} rows, got {len(row_t)}")
    for i, r in enumerate(row_t):
        if not 1 <= len(r) <= ROW_LIMIT:
            raise ValueError(f"row {i} must hold 1..{ROW_LIMIT} cards, got {list(r)}")
        if any(a >= b for a, b in pairwise(r)):
            raise ValueError(f"row {i} must be ascending, got {list(r)}")
    if len(set(lengths)) != 1 or not 1 <= lengths[0] <= HAND_SIZE:
        raise ValueError(f"hands must all hold the same number of cards, 1..{HAND_SIZE}; got lengths {lengths}")
    stock = tuple(sorted(set(range(1, deck_size + 1)) - set(everything)))
    turn = HAND_SIZE - lengths[0]
    picked = _drafted(config, drafted, hand_t, ())
    return State(config, SELECT, hand_t, row_t, empty, zeros, tot, stock, (), zeros, -1, turn, round_index, picked)


def _drafted(
    config: GameConfig,
    drafted: Sequence[Sequence[int]] | None,
    hands: tuple[tuple[int, ...], ...],
    display: tuple[int, ...],
) -> tuple[tuple[int, ...], ...]:
    """The ``drafted`` field of a position (:func:`from_position`): checked, sorted per seat, or its default."""
    n = config.num_players
    if drafted is None:
        return hands if config.variant == "logic" else ((),) * n
    if config.variant != "logic":
        raise ValueError(f"draft picks need variant='logic' (V2), got variant={config.variant!r}")
    try:
        count = len(drafted)
    except TypeError:
        raise ValueError(f"drafted must be a list of {n} lists of cards (one per seat), got {drafted!r}") from None
    if count != n:
        raise ValueError(f"expected {n} lists of drafted cards (num_players={n}), got {count}")
    picked = tuple(tuple(sorted(_ints(p, f"drafted cards of seat {i}"))) for i, p in enumerate(drafted))
    owner: dict[int, int] = {}
    for seat, cards in enumerate(picked):
        if len(cards) > HAND_SIZE:
            raise ValueError(f"seat {seat} drafted {len(cards)} cards; a seat drafts at most {HAND_SIZE} (V2)")
        for c in cards:
            if not 1 <= c <= config.deck_size:
                raise ValueError(f"drafted card {c} is outside the deck 1..{config.deck_size}")
            if c in owner:
                raise ValueError(f"card {c} is drafted by both seat {owner[c]} and seat {seat}")
            owner[c] = seat
        missing = sorted(set(hands[seat]) - set(cards))
        if missing:
            raise ValueError(f"seat {seat} holds {missing} but did not draft them (V2: every held card was drafted)")
    on_display = sorted(set(owner) & set(display))
    if on_display:
        raise ValueError(f"drafted cards {on_display} are still on the display")
    return picked


# --------------------------------------------------------------------------- queries


_LAST_CHOICES: tuple[State | None, Sequence[tuple[int, ...]], int] = (None, (), 0)
"""``(state, *choices(state))`` of the last state :func:`legal_actions` was asked about (states are immutable:
the same object has the same choices; one tuple, replaced whole, so a reader never sees half of it)."""


def legal_actions(state: State, seat: int) -> tuple[int, ...]:
    """The legal actions of ``seat`` (action encoding in the module docstring).

    ``select``: every card in its hand (R5); ``choose_row``: the chooser may
    take any of the 4 rows (R9), the others only no-op; ``draft``: the picker
    may take any display card (V2), the others only no-op; ``done``: none.
    The rule is ``choices``, which :func:`~sixnimmt_env.rules.engine.step` checks actions against.

    Raises:
        ValueError: if ``seat`` is not a seat of this game (0..num_players-1).
    """
    global _LAST_CHOICES
    last = _LAST_CHOICES
    if last[0] is state:  # the seats of one state are usually asked one after another
        options, shift = last[1], last[2]
    else:
        options, shift = choices(state)
        _LAST_CHOICES = (state, options, shift)
    if seat >= 0:
        try:
            mine = options[seat]  # one entry per seat: an IndexError past the last seat
        except IndexError:
            pass
        else:
            if shift == 1:  # select, draft: cards
                return tuple([o - 1 for o in mine])
            if shift == _ROW_SHIFT:  # choose_row: one of the two option tuples of _ROW_CHOICES
                return _ROW_ACTIONS if mine is _ROWS else _NOOP_ONLY
            return ()  # done
    raise ValueError(f"seat must be 0..{len(state.hands) - 1}, got {seat!r}")


def choices(state: State) -> tuple[Sequence[tuple[int, ...]], int]:
    """The legality rule (R5, R9, V2): what each seat may choose now and how an action names it.

    Returns ``(options, shift)``: action ``a`` of seat ``s`` is legal when ``a + shift`` is one of ``options[s]``,
    and then names that option. ``select``: each seat's hand, shift 1 (action ``a`` plays card ``a + 1``);
    ``choose_row``: the chooser's rows 0..3, shift ``-ROW_ACTION``; ``draft``: the picker's display cards, shift
    1; in these two phases every other seat has the no-op alone (``NOOP + shift``); ``done``: nothing.
    :func:`legal_actions` lists it, :func:`step` checks actions against it (one call per step).
    """
    phase = state.phase
    if phase == SELECT:
        return state.hands, 1
    n = len(state.hands)
    if phase == CHOOSE_ROW:
        return _ROW_CHOICES[n][state.chooser], _ROW_SHIFT
    if phase == DONE:
        return _NO_CHOICES[n], 0
    chooser = state.chooser
    return tuple([state.display if s == chooser else _NOOP_DRAFT for s in range(n)]), 1


def row_for(rows: Sequence[Sequence[int]], card: int) -> int:
    """Index of the row ``card`` goes to (R7), or -1 for a low card (R9).

    The row whose last card is the largest value still smaller than ``card``.
    """
    best = -1
    best_end = 0
    i = 0
    for r in rows:  # a counter and plain assignments: about a fifth faster than enumerate (a hot path of step)
        end = r[-1]
        if end < card and end > best_end:  # two comparisons: faster than the chained one
            best = i
            best_end = end
        i += 1  # noqa: SIM113 (enumerate is slower here)
    return best


def cheapest_row_index(row_costs: Sequence[int]) -> int:
    """The row with the fewest bullheads, ties to the lowest index (R9b ``"cheapest"``), from each row's bullheads
    ``row_costs`` (e.g. a view's ``row_bullheads``)."""
    best, best_cost = 0, row_costs[0]
    for i in range(1, len(row_costs)):
        if row_costs[i] < best_cost:
            best, best_cost = i, row_costs[i]
    return best


def cheapest_row(rows: Sequence[Sequence[int]]) -> int:
    """The row with the fewest bullheads, ties to the lowest index (R9b ``"cheapest"``): :func:`cheapest_row_index`
    of the rows' bullheads."""
    return cheapest_row_index([row_bullheads(r) for r in rows])


def immediate_cost(rows: Sequence[Sequence[int]], row_costs: Sequence[int], card: int) -> int:
    """Bullheads ``card`` would take now against ``rows``, the other cards of the turn ignored (the greedy agent's
    cost).

    The bullheads of its row (:func:`~sixnimmt_env.rules.engine.row_for`, R7) if that row holds 5 cards (R8), the
    cheapest row's (:func:`~sixnimmt_env.rules.engine.cheapest_row_index`) if it is a low card (R9), else 0.
    ``row_costs``: each row's bullheads (R2).
    """
    r = row_for(rows, card)
    if r < 0:
        return row_costs[cheapest_row_index(row_costs)]
    return row_costs[r] if len(rows[r]) == ROW_LIMIT else 0


def game_over_after_round(config: GameConfig, totals: Sequence[int], rounds_played: int) -> bool:
    """Whether the game ends after a round (R12): episode of one round, end score reached, or max rounds played."""
    if config.episode == "round":
        return True
    if config.max_rounds is not None and rounds_played >= config.max_rounds:
        return True
    if config.end_score is None:
        return False
    if config.end_rule == "at_least":
        return max(totals) >= config.end_score
    return max(totals) > config.end_score


def winners(state: State) -> tuple[int, ...]:
    """Seats with the lowest total; equal lowest totals share the win (R13)."""
    low = min(state.totals)
    return tuple(i for i, t in enumerate(state.totals) if t == low)


def seen_cards(state: State) -> tuple[int, ...]:
    """Cards revealed to everyone this round, sorted: the rows, the penalty
    piles and the cards of a pending turn (R4). Excludes the draft display."""
    seen = [c for r in state.rows for c in r]
    for p in state.piles:
        seen.extend(p)
    if state.phase == CHOOSE_ROW:
        seen.extend(state.revealed)
    return tuple(sorted(seen))


# --------------------------------------------------------------------------- transitions
#
# ``step`` is the hot path of every environment and benchmark, so it is written
# for CPython speed while staying a pure function: plain loops instead of
# generator expressions, tuples rebuilt only where something changed, the
# legal actions of a seat listed only when an error message needs them, and
# the revealed cards of a turn sorted as packed ints ``card << 4 | seat``
# (``n <= 10 < 16`` seats fit in the low 4 bits).

_SEAT_BITS = 4
_SEAT_MASK = (1 << _SEAT_BITS) - 1


def _as_action(state: State, seat: int, action: object) -> int:
    """``action`` as a plain ``int`` (Python or numpy integer), else :class:`IllegalActionError`."""
    if isinstance(action, bool) or not isinstance(action, int | np.integer):
        raise IllegalActionError(seat, action, legal_actions(state, seat), state.phase)
    return int(action)


def _check_call(state: State, actions: Sequence[int]) -> None:
    """Reject a step on a finished game or with the wrong number of actions (``ValueError``)."""
    n = len(state.hands)
    if state.phase == DONE:
        raise ValueError("the game is over: start a new one")
    if len(actions) != n:
        raise ValueError(f"expected {n} actions (one per seat), got {len(actions)}")


def step(state: State, actions: Sequence[int], rng: np.random.Generator | None = None) -> tuple[State, tuple[int, ...]]:
    """Apply one joint action: one action per seat (R5-R14, V2).

    Args:
        state: the current state (not changed).
        actions: one action per seat in seat order (encoding in the module
            docstring; Python or numpy integers); seats without a decision
            give the no-op 108.
        rng: needed only when this step ends a round and the game goes on (the
            next deal, R14); ``None`` otherwise.

    Returns:
        ``(new_state, penalties)``: ``penalties[seat]`` is the bullheads that
        seat took into its penalty pile in this step (R8, R9).

    Raises:
        IllegalActionError: (a ``ValueError``) naming the seat, the action and
            the legal actions (:func:`legal_actions`); nothing changes.
        ValueError: wrong number of actions, a finished game, or no ``rng``
            when a new round must be dealt.
    """
    phase = state.phase
    hands = state.hands
    if phase == DONE or len(actions) != len(hands):
        _check_call(state, actions)
    options, shift = choices(state)  # the legality rule
    if phase == SELECT:  # R5: every seat plays one card of its hand (its options, shift 1)
        new_hands = []
        cards = []
        keys = []
        for seat in _SEAT_RANGES[len(hands)]:
            a = actions[seat]
            if type(a) is not int:
                a = _as_action(state, seat, a)
            h = options[seat]
            card = a + 1
            try:
                i = h.index(card)
            except ValueError:
                raise IllegalActionError(seat, a, legal_actions(state, seat), phase) from None
            new_hands.append(h[:i] + h[i + 1 :])
            cards.append(card)
            keys.append(card << _SEAT_BITS | seat)
        return _play_turn(state, tuple(new_hands), tuple(cards), keys, rng)
    # choose_row (R9) or draft (V2): the chooser decides, every other seat gives the no-op.
    chooser = state.chooser
    choice = -1  # the chooser's row (choose_row) or display card (draft)
    for seat in _SEAT_RANGES[len(hands)]:
        a = actions[seat]
        if type(a) is not int:
            a = _as_action(state, seat, a)
        if a + shift not in options[seat]:
            raise IllegalActionError(seat, a, legal_actions(state, seat), phase)
        if seat == chooser:
            choice = a + shift
    if phase == CHOOSE_ROW:
        return _choose_row(state, hands, state.revealed, choice, rng)
    return _draft(state, choice)


def step_unchecked(
    state: State, actions: Sequence[int], rng: np.random.Generator | None = None
) -> tuple[State, tuple[int, ...]]:
    """:func:`step` for trusted callers: the same result, but the actions are not validated.

    For loops that draw every action from :func:`legal_actions` (self-play,
    benchmarks). Each action must be a legal plain ``int`` (numpy integers are
    not converted); an illegal one gives an undefined result or an arbitrary
    exception, never an :class:`IllegalActionError`. The state is still never
    changed in place.
    """
    phase = state.phase
    if phase == SELECT:
        hands = state.hands
        new_hands = []
        cards = []
        keys = []
        for seat in _SEAT_RANGES[len(hands)]:
            card = actions[seat] + 1
            h = hands[seat]
            i = h.index(card)
            new_hands.append(h[:i] + h[i + 1 :])
            cards.append(card)
            keys.append(card << _SEAT_BITS | seat)
        return _play_turn(state, tuple(new_hands), tuple(cards), keys, rng)
    if phase == CHOOSE_ROW:
        return _choose_row(state, state.hands, state.revealed, actions[state.chooser] - ROW_ACTION, rng)
    if phase == DRAFT:
        return _draft(state, actions[state.chooser] + 1)
    raise ValueError("the game is over: start a new one")


def _play_turn(
    state: State,
    hands: tuple[tuple[int, ...], ...],
    revealed: tuple[int, ...],
    keys: list[int],
    rng: np.random.Generator | None,
) -> tuple[State, tuple[int, ...]]:
    """Reveal the turn's cards and place them ascending through :func:`_resolve` (R5-R9b).

    ``keys`` are the plays packed as ``card << 4 | seat``. A low card (only the lowest can be one, R9a) either
    waits for its owner's row choice (``choose_row``) or takes the cheapest row (R9b).
    """
    keys.sort()
    rows = list(state.rows)
    ask = _ASK_OWNER if state.config.row_choice == "player" else _CHEAPEST
    taken = _resolve(rows, keys, ask, state.piles, None)
    if taken is _WAITS:  # R9: the low card's owner chooses the row next
        new = _new_state((
            state.config, CHOOSE_ROW, hands, state.rows, state.piles, state.round_penalties, state.totals,
            state.stock, state.display, revealed, keys[0] & _SEAT_MASK, state.turn, state.round, state.drafted,
        ))  # fmt: skip
        return new, _ZEROS[len(hands)]
    return _end_turn(state, hands, revealed, rows, taken, rng)


def _choose_row(
    state: State,
    hands: tuple[tuple[int, ...], ...],
    revealed: tuple[int, ...],
    row: int,
    rng: np.random.Generator | None,
) -> tuple[State, tuple[int, ...]]:
    """The chooser's low card (the lowest of the turn, R9a) takes ``row`` (R9), then the rest of the turn is
    placed (R6-R8): :func:`_resolve`."""
    keys = [card << _SEAT_BITS | s for s, card in enumerate(revealed)]
    keys.sort()
    rows = list(state.rows)
    taken = _resolve(rows, keys, row, state.piles, None)
    return _end_turn(state, hands, revealed, rows, taken, rng)


_PLACED, _FULL, _LOW = "placed", "full", "low"


class _Placed(NamedTuple):
    seat: int
    card: int
    row: int
    reason: str
    taken: tuple[int, ...]
    bullheads: int


class Placement(_Placed):
    """What one revealed card did in its turn (R6-R9): a ``(seat, card, row, reason, taken, bullheads)`` tuple,
    with the rows after it as ``rows``. :func:`~sixnimmt_env.rules.engine.resolve_turn` gives them, one per card in
    placement order.

    Attributes:
        seat: the card's owner.
        card: the card 1..104.
        row: the row 0..3 it went to (for a low card: the row it took, chosen by its owner or R9b).
        reason: ``"placed"`` (joined the row, R7), ``"full"`` (the row held 5 cards: the card takes them into
            its owner's pile and starts the row afresh, R8) or ``"low"`` (lower than every row's last card: its
            owner takes the chosen row, R9).
        taken: the cards taken into the owner's penalty pile (empty for ``"placed"``).
        bullheads: the bullheads of ``taken`` (R2).
        rows: the 4 rows just after this placement (not part of the tuple: two placements are equal when the
            same card did the same thing).
    """

    rows: tuple[tuple[int, ...], ...]

    def __new__(
        cls,
        seat: int,
        card: int,
        row: int,
        reason: str,
        taken: tuple[int, ...],
        bullheads: int,
        rows: tuple[tuple[int, ...], ...] = (),
    ) -> Placement:
        self = tuple.__new__(cls, (seat, card, row, reason, taken, bullheads))
        self.rows = rows
        return self

    @property
    def kind(self) -> str:
        """``reason`` (the play table's name for it)."""
        return self.reason


class Turn(NamedTuple):
    """One resolved turn (:func:`resolve_turn`).

    Attributes:
        placements: one :class:`Placement` per revealed card, in placement order (ascending, R6).
        rows: the 4 rows after the turn.
        penalties: per seat, the bullheads it took in the turn (R8, R9).
    """

    placements: tuple[Placement, ...]
    rows: tuple[tuple[int, ...], ...]
    penalties: tuple[int, ...]


_CHEAPEST, _ASK_OWNER = -1, -2
"""``low_row`` of :func:`_resolve`: a low card takes the cheapest row (R9b), or its owner is asked (R9)."""
_WAITS: Any = object()
"""What :func:`_resolve` returns when a low card waits for its owner's choice."""


def _resolve(
    rows: list[tuple[int, ...]],
    keys: list[int],
    low_row: int,
    piles: tuple[tuple[int, ...], ...],
    log: list[Placement] | None,
) -> tuple[list[int], list[tuple[int, ...]]] | None:
    """The turn resolver (R6-R9b): place the plays ``keys`` (``card << 4 | seat``, ascending) in ``rows`` (changed).

    Each card joins the row whose last card is the largest value below it (R7); the sixth card of a row takes
    the 5 cards into its player's pile and starts the row afresh (R8). A card below every row's last card can
    only be the first, lowest one (R9a): its owner takes row ``low_row`` (0..3, its choice, R9), the cheapest
    row with ``_CHEAPEST`` (R9b), and with ``_ASK_OWNER`` nothing is placed and ``_WAITS`` is returned (the
    owner chooses first); the card starts the taken row afresh.

    Returns ``None`` when nobody took a row, else ``(penalties, piles)``: per seat, the bullheads taken and the
    penalty pile (``piles`` plus the cards taken). When ``log`` is a list, a :class:`Placement` per card is
    appended to it; :func:`step` passes ``None`` and builds none.
    """
    taken = None
    for key in keys:
        card = key >> _SEAT_BITS
        best = row_for(rows, card)  # R7
        if best >= 0:
            row = rows[best]
            if len(row) < ROW_LIMIT:  # the card joins the row
                rows[best] = row + (card,)  # noqa: RUF005 (concatenation is faster than unpacking here)
                if log is not None:
                    log.append(Placement(key & _SEAT_MASK, card, best, _PLACED, (), 0, tuple(rows)))
                continue
            reason = _FULL  # R8: the sixth card takes the row
        else:  # R9: a low card (the first one, R9a)
            if low_row == _ASK_OWNER:
                return _WAITS
            best = cheapest_row(rows) if low_row == _CHEAPEST else low_row
            row = rows[best]
            reason = _LOW
        if taken is None:
            taken = ([0] * len(piles), list(piles))
        seat = key & _SEAT_MASK
        bull = row_bullheads(row)
        taken[0][seat] += bull
        taken[1][seat] += row
        rows[best] = (card,)
        if log is not None:
            log.append(Placement(seat, card, best, reason, row, bull, tuple(rows)))
    return taken


def resolve_turn(rows: Sequence[Sequence[int]], cards: Sequence[int], low_row: int | None = None) -> Turn:
    """Place one turn's revealed cards one at a time in ascending order and say what each did (R6-R9).

    The resolver :func:`step` itself places every turn with; the narrators (:func:`sixnimmt_env.render.step_events`,
    :func:`sixnimmt_env.records.describe_turn`, the play table) read its placements.

    Args:
        rows: the 4 rows at the start of the turn (R9a: a low card's row is chosen on them).
        cards: the card 1..104 each seat revealed, seat order (distinct; at most 10 seats).
        low_row: the row 0..3 the lowest card takes if it is lower than every row's last card (R9: its owner's
            choice); ``None`` takes :func:`cheapest_row` (R9b ``"cheapest"``).

    Returns:
        A :class:`Turn`: the placements in order, the rows after the turn and each seat's bullheads.

    Raises:
        ValueError: ``low_row`` not in 0..3.
    """
    if low_row is not None and not 0 <= low_row < NUM_ROWS:
        raise ValueError(f"low_row must be a row 0..{NUM_ROWS - 1}, got {low_row!r}")
    keys = sorted(int(card) << _SEAT_BITS | seat for seat, card in enumerate(cards))
    current = [tuple(r) for r in rows]
    log: list[Placement] = []
    taken = _resolve(current, keys, _CHEAPEST if low_row is None else low_row, ((),) * len(cards), log)
    penalties = _ZEROS[len(cards)] if taken is None else tuple(taken[0])
    return Turn(tuple(log), tuple(current), penalties)


def _end_turn(
    state: State,
    hands: tuple[tuple[int, ...], ...],
    revealed: tuple[int, ...],
    rows: list[tuple[int, ...]],
    taken: tuple[list[int], list[tuple[int, ...]]] | None,
    rng: np.random.Generator | None,
) -> tuple[State, tuple[int, ...]]:
    """Book the turn's penalties; end the round and maybe the game (R10-R12, R14)."""
    config = state.config
    if taken is None:
        penalties, piles = _ZEROS[len(hands)], state.piles
        round_pen, totals = state.round_penalties, state.totals
    else:
        penalties, piles = tuple(taken[0]), tuple(taken[1])
        round_pen = tuple([a + b for a, b in zip(state.round_penalties, penalties, strict=True)])
        totals = tuple([a + b for a, b in zip(state.totals, penalties, strict=True)])
    new = _new_state((
        config, SELECT, hands, tuple(rows), piles, round_pen, totals,
        state.stock, state.display, revealed, -1, state.turn + 1, state.round, state.drafted,
    ))  # fmt: skip
    if hands[0]:
        return new, penalties
    # R10, R11: the hands are empty, the round is over; cards left in the rows score for nobody.
    if game_over_after_round(config, totals, state.round + 1):  # R12: only at the end of a round
        return new._replace(phase=DONE), penalties
    if rng is None:
        raise ValueError("a new round must be dealt: pass rng to step()")
    return _deal(config, rng, totals, state.round + 1), penalties


def _draft(state: State, card: int) -> tuple[State, tuple[int, ...]]:
    """The picker takes ``card`` from the open display (V2); after the last pick the 4 cards left start the rows."""
    n = len(state.hands)
    seat = state.chooser
    display = tuple([c for c in state.display if c != card])
    hands = list(state.hands)
    hands[seat] = tuple(sorted((*hands[seat], card)))
    hands_t = tuple(hands)  # during the draft every hand holds exactly its seat's picks: they are the drafted cards
    if len(display) == NUM_ROWS:
        rows = tuple([(c,) for c in display])
        return state._replace(phase=SELECT, hands=hands_t, rows=rows, display=(), chooser=-1, drafted=hands_t), _ZEROS[
            n
        ]
    return state._replace(hands=hands_t, display=display, chooser=(seat + 1) % n, drafted=hands_t), _ZEROS[n]


# --------------------------------------------------------------------------- views


class PlayerView(Mapping[str, Any]):
    """The readable, public-plus-own-hand view of one seat (`RULES.md` R4).

    A read-only mapping computed lazily from a state; baseline agents decide
    on it and never decode the float observation. Keys:

    ``seat`` (int), ``num_players`` (int), ``config`` (:class:`GameConfig`),
    ``phase`` (str), ``must_act`` (bool), ``hand`` (sorted list of cards),
    ``rows`` (4 lists of cards), ``row_bullheads`` (4 ints), ``totals`` and
    ``round_penalties`` (lists of bullheads in seat order), ``revealed``
    (cards revealed this turn by seat, 0 = none; see :class:`State`),
    ``chooser`` (seat choosing a row or drafting, -1), ``seen`` (sorted cards
    revealed this round), ``piles`` (cards taken this round by seat),
    ``display`` (sorted draft display), ``drafted`` (cards each seat took in
    this round's draft, by seat; V2), ``turn`` and ``round`` (ints),
    ``legal_actions`` (list of action indices).

    Nothing of another seat's hand or of the unused stock is reachable (E4).
    """

    __slots__ = ("_seat", "_state")
    _KEYS = (
        "seat",
        "num_players",
        "config",
        "phase",
        "must_act",
        "hand",
        "rows",
        "row_bullheads",
        "totals",
        "round_penalties",
        "revealed",
        "chooser",
        "seen",
        "piles",
        "display",
        "drafted",
        "turn",
        "round",
        "legal_actions",
    )

    def __init__(self, state: State, seat: int) -> None:
        self._state = state
        self._seat = seat

    def __getitem__(self, key: str) -> Any:
        s, seat = self._state, self._seat
        if key == "hand":
            return list(s.hands[seat])
        if key == "rows":
            return [list(r) for r in s.rows]
        if key == "legal_actions":
            return list(legal_actions(s, seat))
        if key == "phase":
            return s.phase
        if key == "seat":
            return seat
        if key == "num_players":
            return s.config.num_players
        if key == "config":
            return s.config
        if key == "must_act":
            return s.phase == SELECT or (s.phase in (CHOOSE_ROW, DRAFT) and s.chooser == seat)
        if key == "row_bullheads":
            return [row_bullheads(r) for r in s.rows]
        if key in ("totals", "round_penalties", "revealed"):
            return list(getattr(s, key))
        if key == "chooser":
            return s.chooser
        if key == "seen":
            return list(seen_cards(s))
        if key == "piles":
            return [list(p) for p in s.piles]
        if key == "display":
            return list(s.display)
        if key == "drafted":
            return [list(p) for p in s.drafted]
        if key == "turn":
            return s.turn
        if key == "round":
            return s.round
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)

    def __repr__(self) -> str:
        return f"PlayerView(seat={self._seat}, phase={self._state.phase!r}, hand={list(self._state.hands[self._seat])})"


def views(state: State) -> list[dict[str, Any]]:
    """Every seat's readable view as a plain ``dict``, in seat order: ``views(state)[seat] ==
    dict(PlayerView(state, seat))``, keys in :class:`PlayerView`'s order (tested).

    The public values (rows, row bullheads, scores, revealed and seen cards, piles, display, draft picks) are
    computed once for every seat, then each seat gets its own fresh lists of them beside its private part (hand,
    ``must_act``, ``legal_actions``): changing one seat's dict never changes another's. The environments'
    ``infos="view"`` build their infos with it when a step's infos are first read.
    """
    config, phase, chooser = state.config, state.phase, state.chooser
    n, turn, round_index = config.num_players, state.turn, state.round
    rows, piles, drafted = state.rows, state.piles, state.drafted
    row_bulls = [row_bullheads(r) for r in rows]
    totals, round_penalties, revealed = state.totals, state.round_penalties, state.revealed
    seen, display = seen_cards(state), state.display
    everyone_acts = phase == SELECT
    one_acts = phase in (CHOOSE_ROW, DRAFT)
    out = []
    for seat, hand in enumerate(state.hands):
        out.append(
            {
                "seat": seat,
                "num_players": n,
                "config": config,
                "phase": phase,
                "must_act": everyone_acts or (one_acts and chooser == seat),
                "hand": list(hand),
                "rows": list(map(list, rows)),
                "row_bullheads": row_bulls.copy(),
                "totals": list(totals),
                "round_penalties": list(round_penalties),
                "revealed": list(revealed),
                "chooser": chooser,
                "seen": list(seen),
                "piles": list(map(list, piles)),
                "display": list(display),
                "drafted": list(map(list, drafted)),
                "turn": turn,
                "round": round_index,
                "legal_actions": list(legal_actions(state, seat)),
            }
        )
    return out


def view(state: State, seat: int) -> PlayerView:
    """The readable view of ``seat`` (see :class:`PlayerView`).

    Raises:
        ValueError: if ``seat`` is not a seat of this game (0..num_players-1).
    """
    if isinstance(seat, bool) or not isinstance(seat, int | np.integer) or not 0 <= seat < len(state.hands):
        raise ValueError(f"seat must be 0..{len(state.hands) - 1}, got {seat!r}")
    return PlayerView(state, int(seat))
