"""Distillation (training/distill.py): the labels of mc:N and of learned teachers, the teacher's distribution, the
fit, train.init_from, the wider students."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.compiled.mc import MonteCarloPlayers
from sixnimmt_env.observation import OBS_SIZE, SLICES
from sixnimmt_env.rules.engine import CHOOSE_ROW, NOOP, ROW_ACTION, SELECT, GameConfig
from training.distill import Labels, fit_policy, label_policy_positions, label_positions, teacher_probs

CONFIG = GameConfig(num_players=4, episode="round", row_choice="player")


def test_mc_scores_are_the_searched_candidates_and_the_action_is_their_minimum() -> None:
    games = BatchedGames(CONFIG, 64, seed=5)
    mc = MonteCarloPlayers(games, np.ones(4, bool), 16, seed=6)
    actions = np.zeros((64, 4), np.int64)
    scores = np.empty((64, 4, 109))
    own = np.empty((64, 4, 109))
    masks = np.empty((64, 4, 109), np.int8)
    seen_rows = 0
    while not games.done.all():
        scores.fill(np.nan)
        own.fill(np.nan)
        games.legal_mask(masks)
        mc.act(actions, scores, own)
        for b in range(64):
            for s in range(4):
                finite = np.isfinite(scores[b, s])
                legal = masks[b, s].astype(bool)
                phase, hand_len = games.phase[b], games.hand_len[b, s]
                decides = (phase == 0 and hand_len > 1) or (phase == 1 and games.chooser[b] == s)
                if not decides:
                    assert not finite.any()
                    continue
                assert np.array_equal(finite, legal)  # every legal card (or row) is scored, nothing else
                assert actions[b, s] == np.flatnonzero(finite)[np.argmin(scores[b, s][finite])]  # ties: lower
                assert (own[b, s][finite] >= 0).all()
                if phase == 1:
                    seen_rows += 1
                    assert np.flatnonzero(finite).tolist() == [ROW_ACTION + r for r in range(4)]
        games.step(actions)
    assert seen_rows > 0


def test_mc_scores_must_come_in_pairs_of_the_right_shape() -> None:
    games = BatchedGames(CONFIG, 2, seed=0)
    mc = MonteCarloPlayers(games, np.ones(4, bool), 2, seed=0)
    out = np.zeros((2, 4), np.int64)
    with pytest.raises(ValueError, match="both scores and own"):
        mc.act(out, scores=np.zeros((2, 4, 109)))
    with pytest.raises(ValueError, match=r"scores must be a float64 array of shape \(2, 4, 109\)"):
        mc.act(out, scores=np.zeros((2, 4, 108)), own=np.zeros((2, 4, 109)))


def test_teacher_probs() -> None:
    scores = np.array([[0.0, np.nan, 1.0, np.nan], [2.0, 2.0, np.nan, np.nan]])
    p = teacher_probs(scores, 1.0)
    e = np.exp(-1.0)
    assert np.allclose(p[0], [1 / (1 + e), 0, e / (1 + e), 0])
    assert np.allclose(p[1], [0.5, 0.5, 0, 0])
    assert np.allclose(teacher_probs(scores, 0.01)[0], [1, 0, 0, 0])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        teacher_probs(scores, 0.0)
    with pytest.raises(ValueError, match="at least one finite score"):
        teacher_probs(np.full((1, 3), np.nan), 1.0)


def test_labels_hold_real_decisions_and_their_returns(tmp_path: Path) -> None:
    labels = label_positions(CONFIG, 1500, 4, batch_size=16, seed=3)
    assert len(labels) >= 1500
    assert labels.obs.shape == (len(labels), OBS_SIZE) and labels.obs.dtype == np.float32
    assert np.array_equal(labels.mask, np.isfinite(labels.scores))  # scored exactly where legal
    assert not labels.mask[:, NOOP].any()
    hand = labels.obs[:, SLICES["hand"]]
    phase = labels.obs[:, SLICES["phase"]].argmax(axis=1)
    select = phase == 0
    assert np.array_equal(labels.mask[select, :104], hand[select] > 0)  # card selection: the held cards
    assert (hand[select].sum(axis=1) >= 2).all()  # a forced last card is no decision
    assert (labels.mask[phase == 1, ROW_ACTION : ROW_ACTION + 4]).all()
    assert {SELECT, CHOOSE_ROW} == {("select", "choose_row")[p] for p in set(phase.tolist())}
    assert (labels.returns <= 0).all()
    # the first decision of a round: the return is minus the whole round's penalty, which is at most 171 (R2)
    first = select & (hand.sum(axis=1) == 10)
    assert first.sum() % 4 == 0 and first.sum() >= 16 * 4  # each episode: one first decision per seat
    assert (labels.returns[first] >= -171).all() and labels.returns[first].mean() < -3
    path = labels.save(tmp_path / "labels.npz")
    again = Labels.load(path)
    assert np.array_equal(again.scores, labels.scores, equal_nan=True) and np.array_equal(again.obs, labels.obs)
    same = label_positions(CONFIG, 1500, 4, batch_size=16, seed=3)
    assert np.array_equal(same.obs, labels.obs) and np.array_equal(same.returns, labels.returns)


def test_fit_learns_the_teacher(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    from training.policy import CardPolicy
    from training.vec_env import SixNimmtVecEnv

    labels = label_positions(CONFIG, 6000, 16, batch_size=32, seed=1)  # a held-out part large enough for the margins
    env = SixNimmtVecEnv(1, seed=0, num_players=4, episode="round", row_choice="player")
    model = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [64, 64]}, seed=0, n_steps=16, batch_size=16)
    before = fit_policy(model.policy, labels, epochs=0, batch_size=256, log=lambda _: None)
    with pytest.raises(ValueError, match=r"fit_policy: \d+ training labels .* fewer than batch_size=100000"):
        fit_policy(model.policy, labels, epochs=1, batch_size=100_000, log=lambda _: None)
    after = fit_policy(model.policy, labels, epochs=15, batch_size=256, learning_rate=3e-3, log=lambda _: None)
    # held-out figures (measured: cross-entropy 1.66 -> 1.57, agreement 0.20 -> 0.32, value RMSE 13.1 -> 6.4)
    assert after["cross_entropy"] < before["cross_entropy"] - 0.03
    assert after["agreement"] > before["agreement"] + 0.08
    assert after["value_rmse"] < before["value_rmse"] - 2.0
    # the distilled weights start a new run (train.init_from)
    path = tmp_path / "distilled.zip"
    model.save(path)
    from training.sb3_backend import init_policy

    fresh = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [64, 64]}, seed=5, n_steps=16, batch_size=16)
    init_policy(fresh, path)
    for (name, a), b in zip(model.policy.state_dict().items(), fresh.policy.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    from training.config import ConfigError

    other = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [32]}, n_steps=16, batch_size=16)
    with pytest.raises(ConfigError, match="its policy differs from the config's"):
        init_policy(other, path)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["distill.enabled=true", "distill.sample=8"], "unknown key 'distill.sample'"),
        (["distill.enabled=true", "distill.samples=0"], "key 'distill.samples' must be an integer >= 1, got 0"),
        (["distill.enabled=true", "distill.workers=0"], "key 'distill.workers' must be an integer >= 1, got 0"),
        (["distill.enabled=true", "distill.temperature=0"], "key 'distill.temperature' must be a number > 0.0, got 0"),
        (["distill.enabled=true", "env.episode=game"], "'distill.enabled' needs env.episode: round"),
        (["distill.enabled=true", "train.backend=rllib"], "'distill.enabled' applies to train.backend: sb3 only"),
        (
            ["train.init_from=no/such.zip"],
            f"key 'train.init_from' '{Path.cwd() / 'no/such.zip'}': no such checkpoint file",
        ),
    ],
)
def test_distill_config_errors_name_the_key(override: list[str], message: str) -> None:
    from training.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=message):
        load_config(Path(__file__).parent.parent / "configs" / "smoke.yaml", override)


def test_a_run_with_a_distill_stage_starts_ppo_from_the_fitted_policy(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    sets = [
        f"train.output_dir={tmp_path}", "distill.enabled=true", "distill.samples=4", "distill.decisions=2000",
        "distill.games=32", "distill.epochs=2", "distill.batch_size=256", "self_play.enabled=false",
    ]  # fmt: skip
    args = [sys.executable, "-m", "training.train", str(root / "configs" / "smoke.yaml"), "--no-progress"]
    result = subprocess.run([*args, *(x for s in sets for x in ("--set", s))], capture_output=True, text=True, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = (tmp_path / "smoke").iterdir()
    info = json.loads((run / "distill" / "distill.json").read_text())
    assert info["labels"] >= 2000 and info["settings"]["samples"] == 4 and 0 <= info["agreement"] <= 1
    assert Labels.load(run / "distill" / "labels.npz").obs.shape == (info["labels"], OBS_SIZE)
    assert (run / "distill" / "distilled.zip").is_file() and (run / "final_model.zip").is_file()
    assert "distill: held-out agreement with mc:4" in result.stderr


def test_parallel_labelling_is_two_seeded_shards() -> None:
    from training.distill import label_in_parallel

    one = label_in_parallel(CONFIG, 600, 2, batch_size=8, seed=4, workers=1)
    same = label_positions(CONFIG, 600, 2, batch_size=8, seed=4)
    assert np.array_equal(one.obs, same.obs) and np.array_equal(one.returns, same.returns)
    two = label_in_parallel(CONFIG, 600, 2, batch_size=8, seed=4, workers=2)
    shard0 = label_positions(CONFIG, 300, 2, batch_size=8, seed=[4, 0])
    shard1 = label_positions(CONFIG, 300, 2, batch_size=8, seed=[4, 1])
    assert len(two) == len(shard0) + len(shard1) >= 600
    assert np.array_equal(two.obs, np.concatenate([shard0.obs, shard1.obs]))
    assert np.array_equal(two.scores, np.concatenate([shard0.scores, shard1.scores]), equal_nan=True)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        label_in_parallel(CONFIG, 600, 2, workers=0)


# ---------------------------------------------------------------- a learned teacher (issue 58)

TEACHER = "champion:stage-8"


def _masked_softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The policy of masked logits, ``float64``, computed here on its own (not through ``teacher_probs``)."""
    z = np.where(mask, logits.astype(np.float64), -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def test_a_policy_teachers_labels_are_its_own_softmax_on_legal_decisions() -> None:
    from sixnimmt_env.champion import load_champion

    labels = label_policy_positions(CONFIG, 1500, TEACHER, batch_size=16, seed=7)
    assert len(labels) >= 1500 and labels.teacher == TEACHER
    assert labels.obs.shape == (len(labels), OBS_SIZE) and labels.obs.dtype == np.float32
    assert labels.scores.dtype == np.float32 and labels.mask.dtype == np.bool_
    assert np.array_equal(labels.mask, np.isfinite(labels.scores))  # scored exactly where legal
    assert not labels.mask[:, NOOP].any() and (labels.mask.sum(axis=1) >= 2).all()  # real decisions only
    hand = labels.obs[:, SLICES["hand"]]
    phase = labels.obs[:, SLICES["phase"]].argmax(axis=1)
    select = phase == 0
    assert np.array_equal(labels.mask[select, :104], hand[select] > 0)  # card selection: the held cards
    assert (labels.mask[phase == 1, ROW_ACTION : ROW_ACTION + 4]).all() and (phase == 1).any()
    # the soft targets are the teacher's own masked softmax, recomputed with its numpy actor on the stored observations
    actor = load_champion(TEACHER).actor
    logits = actor.logits(labels.obs)
    stored = teacher_probs(labels.scores, 1.0)
    # measured: 9.7e-7 at most (float32 logits of the same weights in other batches: the order of the sums differs)
    assert np.abs(stored - _masked_softmax(logits, labels.mask)).max() < 1e-5
    assert np.allclose(-labels.scores[labels.mask], logits[labels.mask], rtol=1e-5, atol=1e-5)
    # the first decision of each seat: minus the whole round's penalty (at most 171, R2); measured mean -10.5 (188)
    first = select & (hand.sum(axis=1) == 10)
    assert first.sum() % 4 == 0 and first.sum() >= 16 * 4
    assert (labels.returns <= 0).all() and (labels.returns[first] >= -171).all()
    assert -14 < labels.returns[first].mean() < -7
    # seeded: the same seed gives the same labels, another seed other games
    same = label_policy_positions(CONFIG, 1500, TEACHER, batch_size=16, seed=7)
    for field in ("obs", "mask", "returns"):
        assert np.array_equal(getattr(same, field), getattr(labels, field)), field
    assert np.array_equal(same.scores, labels.scores, equal_nan=True)
    other = label_policy_positions(CONFIG, 1500, TEACHER, batch_size=16, seed=8)
    assert not np.array_equal(other.obs[:50], labels.obs[:50])


def test_a_policy_teachers_returns_are_the_bullheads_taken_later_in_a_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every labelled decision, replayed on the reference engine from the recorded deals and joint actions: the same
    observation, the same legal actions, and as return minus the bullheads its seat took from there to the round's
    end."""
    from sixnimmt_env.observation import encode
    from sixnimmt_env.rules import engine
    from training import distill

    class RecordingGames(BatchedGames):
        """The compiled games, recording each new game's state and each step's joint actions."""

        def __init__(self, config: GameConfig, batch_size: int, seed: int | None = None) -> None:
            super().__init__(config, batch_size, seed)
            self.starts = [(0, b, self.get_state(b)) for b in range(self.batch_size)]
            self.steps: list[tuple[np.ndarray, np.ndarray]] = []

        def step(self, actions: np.ndarray, check: bool = True) -> np.ndarray:
            self.steps.append((self.done.copy(), np.array(actions, np.int64)))
            return super().step(actions, check)

        def reset_done(self) -> np.ndarray:
            which = super().reset_done()
            self.starts += [(len(self.steps), int(b), self.get_state(int(b))) for b in np.flatnonzero(which)]
            return which

    made: list[RecordingGames] = []

    def recording(config: GameConfig, batch_size: int, seed: int | None = None) -> RecordingGames:
        made.append(RecordingGames(config, batch_size, seed))
        return made[-1]

    monkeypatch.setattr(distill, "BatchedGames", recording)
    labels = label_policy_positions(CONFIG, 200, TEACHER, batch_size=3, epsilon=0.3, seed=11)
    (games,) = made
    assert len(games.starts) >= 6  # three slots, more than one episode each
    states: dict[int, engine.State] = {}
    expected_obs, expected_mask, pending = [], [], []  # pending: (episode, seat, penalty so far)
    finals: dict[int, tuple[int, ...]] = {}
    episode_of: dict[int, int] = {}
    starts = list(games.starts)
    for t, (done, actions) in enumerate(games.steps):
        while starts and starts[0][0] == t:
            _, b, state = starts.pop(0)
            states[b], episode_of[b] = state, len(episode_of) + len(finals)
        for b in range(games.batch_size):
            if done[b]:
                continue
            state = states[b]
            for s in range(CONFIG.num_players):
                legal = engine.legal_actions(state, s)
                if len(legal) >= 2:
                    expected_obs.append(encode(state, s))
                    expected_mask.append(np.isin(np.arange(109), legal))
                    pending.append((episode_of[b], s, state.round_penalties[s]))
            states[b], _ = engine.step(state, [int(a) for a in actions[b]])
            if states[b].phase == "done":
                finals[episode_of.pop(b)] = states[b].round_penalties
    assert len(pending) == len(labels) and not episode_of  # every game replayed to its end
    assert np.array_equal(np.stack(expected_obs), labels.obs)
    assert np.array_equal(np.stack(expected_mask), labels.mask)
    expected = np.array([-(finals[e][s] - before) for e, s, before in pending], np.float32)
    assert np.array_equal(expected, labels.returns) and (expected < 0).any()


def test_a_wider_student_learns_the_teacher_and_plays_its_actions_in_numpy(tmp_path: Path) -> None:
    """A 256-256 card policy fitted on stage 8's soft targets agrees with stage 8's best action far more often than
    before; its actor exported as a champion weights file plays the torch policy's actions."""
    import json

    from sb3_contrib import MaskablePPO

    from sixnimmt_env.champion import FORMAT, load_champion
    from training.policy import CardPolicy, MaskedCategorical, NumpyCardActor
    from training.vec_env import SixNimmtVecEnv

    torch.set_num_threads(1)
    labels = label_policy_positions(CONFIG, 16000, TEACHER, batch_size=64, seed=5)
    env = SixNimmtVecEnv(1, seed=0, num_players=4, episode="round", row_choice="player")
    model = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [256, 256]}, seed=0, n_steps=16, batch_size=16)
    assert isinstance(model.policy, CardPolicy)
    before = fit_policy(model.policy, labels, epochs=0, batch_size=512, holdout=0.1, log=lambda _: None)
    after = fit_policy(
        model.policy, labels, epochs=6, batch_size=512, learning_rate=2e-3, holdout=0.1, log=lambda _: None
    )
    # held-out figures (measured: agreement 0.23 -> 0.77, cross-entropy 1.64 -> 0.77, value RMSE 10.5 -> 6.0)
    assert before["agreement"] < 0.3 and after["agreement"] > 0.65
    assert after["cross_entropy"] < before["cross_entropy"] - 0.5
    assert after["value_rmse"] < before["value_rmse"] - 3.0
    # the export of lab/train_champion.py (NumpyCardActor's arrays in a .npz with its format) plays the same actions
    path = tmp_path / "student_256.npz"
    arrays: dict[str, Any] = {"meta": np.array(json.dumps({"format": FORMAT})), **NumpyCardActor(model.policy).arrays()}
    np.savez_compressed(path, **arrays)
    champion = load_champion(f"champion:{path}")
    assert champion.actor.hidden_layers() == [(256, "tanh"), (256, "tanh")]
    obs, mask = labels.obs[-1000:], labels.mask[-1000:]
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.as_tensor(obs), action_masks=mask)
        assert isinstance(dist, MaskedCategorical)
        torch_logits = dist.logits.numpy()
        torch_actions = dist.mode().numpy()
    np.testing.assert_allclose(champion.actor.logits(obs), torch_logits, rtol=1e-4, atol=1e-4)
    assert np.array_equal(champion.choose(obs, mask), torch_actions)


def test_teacher_specs_and_the_default_mc_teacher() -> None:
    from training.distill import label_in_parallel, label_teacher, parse_teacher, teacher_name

    assert parse_teacher("mc:16") == 16 and parse_teacher(8) == 8 and teacher_name(8) == "mc:8"
    assert parse_teacher("champion") == "champion" and parse_teacher("ppo:x.zip") == "ppo:x.zip"
    cases: list[tuple[int | str, str]] = [
        ("mc:0", "expected mc:N"),
        ("mc:x", "expected mc:N"),
        ("greedy", "expected 'mc:N' or a learned policy"),
        ("champion-sample", "expected 'mc:N' or a learned policy"),
        ("ppo:", "expected 'mc:N' or a learned policy"),
        (0, "N >= 1"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            parse_teacher(bad)
    # "mc:N" is mc:N with samples N: the same labels
    by_spec = label_teacher(CONFIG, 300, "mc:2", batch_size=8, seed=4)
    by_samples = label_positions(CONFIG, 300, 2, batch_size=8, seed=4)
    assert by_spec.teacher == by_samples.teacher == "mc:2"
    assert np.array_equal(by_spec.scores, by_samples.scores, equal_nan=True)
    # a learned teacher over two workers: two seeded shards, as mc's
    two = label_in_parallel(CONFIG, 400, TEACHER, batch_size=8, seed=4, workers=2)
    shard1 = label_policy_positions(CONFIG, 200, TEACHER, batch_size=8, seed=[4, 1])
    assert two.teacher == TEACHER and np.array_equal(two.obs[-len(shard1) :], shard1.obs)
    assert np.array_equal(two.returns[-len(shard1) :], shard1.returns)


def test_distill_teacher_in_a_config(tmp_path: Path) -> None:
    import shutil

    from sixnimmt_env.champion import WEIGHTS
    from training.config import ConfigError, load_config

    smoke = Path(__file__).parent.parent / "configs" / "smoke.yaml"
    assert load_config(smoke, ["distill.enabled=true"]).distill.teacher is None  # mc:{samples}, as before
    cfg = load_config(smoke, ["distill.enabled=true", f"distill.teacher={TEACHER}"])
    assert cfg.distill.teacher == TEACHER
    # a path is relative to the config that names it
    shutil.copy(WEIGHTS, tmp_path / "teacher.npz")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text("distill: {enabled: true, teacher: 'champion:../teacher.npz'}\n")
    assert load_config(tmp_path / "sub" / "c.yaml").distill.teacher == f"champion:{tmp_path / 'teacher.npz'}"
    for teacher, message in [
        ("greedy", "key 'distill.teacher' 'greedy': expected 'mc:N' or one of our learned policies"),
        ("mc:0", "key 'distill.teacher' 'mc:0': expected mc:N with an integer N >= 1"),
        ("champion:no/such.npz", "key 'distill.teacher': champion weights .* not found"),
        ("ppo:no/such.zip", "key 'distill.teacher': checkpoint .* does not exist"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_config(smoke, ["distill.enabled=true", f"distill.teacher={teacher}"])


def test_a_residual_512x2_student_plays_the_same_logits_in_torch_and_numpy(tmp_path: Path) -> None:
    """``algo.policy_kwargs.residual``: the card policy's second 512-unit layer adds its input, in torch
    (``ResidualLayer``), in the numpy actor of the exported weights (``hidden_residual``, their own format), after
    ``MaskablePPO.load`` and after ``load_actor`` into a fresh residual policy."""
    import json

    from sb3_contrib import MaskablePPO

    from sixnimmt_env.champion import FORMAT, FORMAT_RESIDUAL, CardActor, read_weights
    from training.config import ConfigError, load_config
    from training.policy import CardPolicy, MaskedCategorical, NumpyCardActor, ResidualLayer, load_actor
    from training.ppo_agents import load_policy
    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(1, seed=0, num_players=4, episode="round", row_choice="player")
    kwargs: dict[str, Any] = {"net_arch": [512, 512], "residual": True}
    model = MaskablePPO(CardPolicy, env, policy_kwargs=kwargs, seed=0, n_steps=16, batch_size=16)
    policy = model.policy
    assert isinstance(policy, CardPolicy)
    net = policy.mlp_extractor.policy_net
    assert isinstance(net[2], ResidualLayer) and len(net) == 3  # Linear(626, 512), Tanh, then h + tanh(W h + b)
    labels = label_policy_positions(CONFIG, 1000, TEACHER, batch_size=32, seed=3)
    fit_policy(policy, labels, epochs=2, batch_size=256, learning_rate=3e-3, log=lambda _: None)  # weights that matter
    obs = labels.obs[:500]

    def torch_logits(p: CardPolicy) -> np.ndarray:
        with torch.no_grad():
            dist = p.get_distribution(torch.as_tensor(obs))
            assert isinstance(dist, MaskedCategorical)
            return dist.logits.numpy()

    expected = torch_logits(policy)
    # without the skip the logits would differ: the residual path is live
    arrays = NumpyCardActor(policy).arrays()
    assert arrays["hidden_residual"].tolist() == [False, True]
    plain = {k: v for k, v in arrays.items() if k != "hidden_residual"}
    assert np.abs(CardActor(plain).logits(obs) - expected).max() > 0.1
    np.testing.assert_allclose(NumpyCardActor(policy).logits(obs), expected, rtol=1e-4, atol=1e-4)
    # the exported file: its own format, read back by the package's reader
    path = tmp_path / "residual.npz"
    entries: dict[str, Any] = {"meta": np.array(json.dumps({"format": FORMAT_RESIDUAL})), **arrays}
    np.savez_compressed(path, **entries)
    actor, _ = read_weights(path)
    assert actor.residual == [False, True] and actor.hidden_layers() == [(512, "tanh"), (512, "tanh")]
    np.testing.assert_allclose(actor.logits(obs), expected, rtol=1e-4, atol=1e-4)
    wrong = tmp_path / "wrong.npz"
    np.savez_compressed(wrong, **{**entries, "meta": np.array(json.dumps({"format": FORMAT}))})
    with pytest.raises(ValueError, match="format 'sixnimmt-card-actor-1' but the file has residual layers"):
        read_weights(wrong)
    # a checkpoint keeps the option; load_actor copies the file into a fresh residual policy, not into a plain one
    model.save(tmp_path / "residual.zip")
    loaded, _ = load_policy(tmp_path / "residual.zip")
    np.testing.assert_allclose(torch_logits(loaded), expected, rtol=1e-5, atol=1e-5)
    fresh = MaskablePPO(CardPolicy, env, policy_kwargs=kwargs, seed=1, n_steps=16, batch_size=16).policy
    assert isinstance(fresh, CardPolicy)
    load_actor(fresh, path)
    np.testing.assert_allclose(torch_logits(fresh), expected, rtol=1e-4, atol=1e-4)
    plain_policy = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [512, 512]}, n_steps=16, batch_size=16)
    assert isinstance(plain_policy.policy, CardPolicy)
    with pytest.raises(ValueError, match="residual hidden layers"):
        load_actor(plain_policy.policy, path)
    # the config's key: the card policy's only; a .npz to start from must have the same residual layers
    smoke = Path(__file__).parent.parent / "configs" / "smoke.yaml"
    assert load_config(smoke, ["algo.policy_kwargs.residual=true"]).algo.policy_kwargs.residual is True
    with pytest.raises(ConfigError, match=r"'algo\.policy_kwargs\.residual' goes with 'algo\.policy: card'"):
        load_config(smoke, ["algo.policy=MlpPolicy", "algo.policy_kwargs.residual=true"])
    sets = ["train.init_from=stage-8", "algo.policy_kwargs.net_arch=[64, 64]", "algo.policy_kwargs.residual=true"]
    with pytest.raises(ConfigError, match=r"residual hidden layers \[False, False\], but .* gives \[False, True\]"):
        load_config(smoke, sets)
    assert load_config(smoke, [sets[2], f"train.init_from={path}", "algo.policy_kwargs.net_arch=[512, 512]"])
