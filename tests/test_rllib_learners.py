"""RLlib learners that scale (issue 56): APPO on the masked card policy (the target-network API, the mask on the
target logits too), two data-parallel PPO learners, and the device keys (``train.device``,
``ray.num_gpus_per_learner``) refused where no GPU is visible. Real Ray, local, tiny configs, two iterations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY
from training.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "rllib_smoke.yaml"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _config(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    """The smoke config with ``sections`` merged in key by key, written to ``tmp_path``."""
    raw = yaml.safe_load(SMOKE.read_text())
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.fixture
def no_gpu() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("these checks are for a machine without a GPU")


# --------------------------------------------------------------------------- config checks (no Ray)


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        ({"ray": {"algorithm": "sac"}}, r"key 'ray.algorithm' must be 'ppo' or 'appo', got 'sac'"),
        ({"train": {"device": "tpu"}}, r"key 'train.device' must be cpu, auto, cuda or cuda:N, got 'tpu'"),
        (
            {"ray": {"num_learners": 2, "num_cpus": 2}},
            r"key 'ray.num_learners': 1 runners x 1.0 CPUs \+ 2 learners x 1.0 CPUs need 3 CPUs, more than "
            r"ray.num_cpus = 2",
        ),
    ],
)
def test_learner_config_errors_name_key_value_and_allowed(tmp_path: Path, sections: dict, message: str) -> None:
    path = _config(tmp_path, **sections)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(info.value).startswith(str(path))


@pytest.mark.usefixtures("no_gpu")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:1"])
@pytest.mark.parametrize("base", ["smoke.yaml", "rllib_smoke.yaml"])
def test_cuda_device_refused_without_gpu(base: str, device: str) -> None:
    with pytest.raises(ConfigError, match=rf"key 'train.device' is '{device}', but no GPU is visible here"):
        load_config(ROOT / "configs" / base, [f"train.device={device}"])
    assert load_config(ROOT / "configs" / base, ["train.device=auto"]).train.device == "auto"  # cpu here


@pytest.mark.usefixtures("no_gpu")
@pytest.mark.parametrize("learners", [0, 2])
def test_gpu_per_learner_refused_without_gpu(tmp_path: Path, learners: int) -> None:
    path = _config(tmp_path, ray={"num_gpus_per_learner": 1, "num_learners": learners})
    with pytest.raises(ConfigError, match=r"key 'ray.num_gpus_per_learner' asks for a GPU, and this machine has none"):
        load_config(path)


def test_appo_training_kwargs_drop_ppo_only_settings() -> None:
    from ray.rllib.algorithms.appo import APPOConfig

    from training.config.rllib_settings import ppo_training_kwargs

    smoke, smoke_appo = load_config(SMOKE), load_config(SMOKE, ["ray.algorithm=appo"])
    ppo = ppo_training_kwargs(smoke.algo, smoke.ray)
    appo = ppo_training_kwargs(smoke_appo.algo, smoke_appo.ray)
    assert ppo.pop("vf_clip_param") == 1e9 and ppo == appo  # the same SB3 settings, no value clipping in APPO
    config = APPOConfig().training(**appo)  # every key is one of APPO's
    assert (config.minibatch_size, config.num_epochs, config.lr, config.use_kl_loss) == (128, 1, 3e-4, False)


# --------------------------------------------------------------------------- the module's target-network API


def _module(policy: str = "card") -> Any:
    from gymnasium import spaces

    from sixnimmt_env.observation import OBS_SIZE
    from sixnimmt_env.rllib_env import masked_space
    from sixnimmt_env.rules.engine import NUM_ACTIONS
    from training.rllib.module import CardRLModule

    box = spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
    return CardRLModule(
        observation_space=masked_space(box),
        action_space=spaces.Discrete(NUM_ACTIONS),
        model_config={"policy": policy, "net_arch": [16, 8]},
    )


def _observations(n_games: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Observations ``(B, 506)`` and masks ``(B, 109)`` of the seats of ``n_games`` 4-player games, a few turns in."""
    from sixnimmt_env.rllib_env import masked_parallel_env

    rng = np.random.default_rng(seed)
    xs, masks = [], []
    for g in range(n_games):
        env = masked_parallel_env(num_players=4)
        obs, _ = env.reset(seed=seed + g)
        for _ in range(g % 5):
            obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(o[MASK_KEY]))) for a, o in obs.items()})
        xs += [o[OBS_KEY] for o in obs.values()]
        masks += [o[MASK_KEY] for o in obs.values()]
    return np.stack(xs), np.stack(masks)


@pytest.mark.parametrize("policy", ["card", "MlpPolicy"])
def test_target_networks_mask_their_logits_and_follow_updates(policy: str) -> None:
    import torch
    from ray.rllib.core.learner.utils import update_target_network
    from ray.rllib.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    module = _module(policy)
    ppo_keys = set(module.get_state())
    assert not any(k.startswith("_target") for k in ppo_keys)  # PPO never builds the copies
    module.make_target_networks()
    x, mask = _observations()
    batch = {"obs": {OBS_KEY: torch.as_tensor(x), MASK_KEY: torch.as_tensor(mask)}}
    with torch.no_grad():
        trained = module.forward_train(batch)["action_dist_inputs"]
        target = module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
        # the same weights: the same logits, reusing the features forward_train computed
        torch.testing.assert_close(target, trained)
        assert (target[torch.as_tensor(mask) == 0] == FLOAT_MIN).all()
        assert (
            torch.isfinite(target[torch.as_tensor(mask) == 1]).all()
            and (target[torch.as_tensor(mask) == 1] > -1e6).all()
        )
        for p in module.parameters():
            if p.requires_grad:
                p.add_(0.1)
        moved = module.forward_train(batch)["action_dist_inputs"]
        assert not torch.allclose(moved[torch.as_tensor(mask) == 1], trained[torch.as_tensor(mask) == 1])
        torch.testing.assert_close(module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS], target)
        for main, copy in module.get_target_network_pairs():
            assert not any(p.requires_grad for p in copy.parameters())
            update_target_network(main_net=main, target_net=copy, tau=1.0)
        # a fresh batch (no features kept from forward_train): computed again, the same as the moved actor's
        fresh = {"obs": {OBS_KEY: torch.as_tensor(x.copy()), MASK_KEY: torch.as_tensor(mask)}}
        torch.testing.assert_close(module.forward_target(fresh)[TARGET_NETWORK_ACTION_DIST_INPUTS], moved)
    # the target copies are training state: an env runner's (inference-only) weights leave them out
    inference = set(module.get_state(inference_only=True))
    assert inference == ppo_keys and set(module.get_state()) > ppo_keys


# --------------------------------------------------------------------------- real Ray: APPO, two learners


@pytest.fixture
def ray_session():
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    yield ray
    if ray.is_initialized():
        ray.shutdown()


def _legal_samples(algo: Any) -> tuple[np.ndarray, np.ndarray]:
    """Masks ``(N, 109)`` and actions ``(N,)`` of a fresh sample of the remote env runners (the exploration
    policy: sampled from the masked distribution)."""

    def sample(runner: Any) -> list[tuple[np.ndarray, np.ndarray]]:
        episodes = runner.sample(num_timesteps=64, random_actions=False)
        return [
            (np.asarray(e.get_observations(slice(0, len(e)))[MASK_KEY]), np.asarray(e.get_actions())) for e in episodes
        ]

    parts = [p for r in algo.env_runner_group.foreach_env_runner(sample, local_env_runner=False) for p in r]
    return np.concatenate([m for m, _ in parts]), np.concatenate([a for _, a in parts]).astype(np.int64)


def test_appo_trains_the_masked_card_policy(tmp_path: Path, ray_session: Any) -> None:
    """Two APPO iterations with env steps (self-play off); the runners' sampled actions and the trained module's
    greedy actions are legal; the learner's module has target networks whose logits are masked too."""
    import torch
    from ray.rllib.algorithms.appo import APPO
    from ray.rllib.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS, NUM_ENV_STEPS_SAMPLED
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    from training.rllib.backend import algorithm_config, register_envs, start_ray

    cfg = load_config(_config(tmp_path, ray={"algorithm": "appo", "num_cpus": 2}, self_play={"enabled": False}))
    assert start_ray(cfg.ray)
    register_envs()
    algo = algorithm_config(cfg).build_algo()
    try:
        assert isinstance(algo, APPO)
        trained = []
        for _ in range(40):  # APPO is asynchronous: an iteration may come back before the first samples
            result = algo.train()
            if result.get(ENV_RUNNER_RESULTS, {}).get(NUM_ENV_STEPS_SAMPLED, 0) > 0 and LEARNER_RESULTS in result:
                trained.append(result)
            if len(trained) == 2:
                break
        assert len(trained) == 2
        stats = trained[-1][LEARNER_RESULTS]["default_policy"]
        assert stats["num_module_steps_trained_lifetime"] > 0
        assert np.isfinite([stats["policy_loss"], stats["vf_loss"], stats["entropy"]]).all()
        assert 0 < stats["entropy"] < np.log(10) + 1e-3  # masked: at most 10 legal actions (R4)
        masks, actions = _legal_samples(algo)
        assert len(actions) >= 64 and (masks[np.arange(len(actions)), actions] == 1).all()

        learner_module = algo.learner_group._learner.module["default_policy"]
        x, mask = _observations()
        batch = {"obs": {OBS_KEY: torch.as_tensor(x), MASK_KEY: torch.as_tensor(mask)}}
        with torch.no_grad():
            target = learner_module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
            greedy = algo.get_module().forward_inference(batch)["action_dist_inputs"].argmax(dim=1).numpy()
        assert (target[torch.as_tensor(mask) == 0] == FLOAT_MIN).all()
        assert (mask[np.arange(len(greedy)), greedy] == 1).all()
        # what the run saves (final_model/, best_model/, snapshots, evaluations) is the learner's weights: APPO does
        # not sync the driver's acting copy after its updates
        from training.rllib.backend import _save_module

        _save_module(algo, tmp_path / "final_model")
        learned = {k: v.detach().numpy() for k, v in learner_module.state_dict().items() if "target" not in k}
        from training.rllib.rllib_agents import load_module

        saved = load_module(tmp_path / "final_model").state_dict()
        assert learned.keys() <= saved.keys()
        assert all(np.array_equal(saved[k].detach().numpy(), v) for k, v in learned.items())
    finally:
        algo.stop()
    # an APPO module plays as rllib:PATH (the arena's loader; the target weights are not needed there)
    from training.rllib.rllib_agents import load_rllib_agent

    agent = load_rllib_agent(f"rllib:{tmp_path / 'final_model'}")
    chosen = agent.choose(x, mask)
    assert (mask[np.arange(len(chosen)), chosen] == 1).all()


def test_two_learners_train_ppo_data_parallel(tmp_path: Path, ray_session: Any) -> None:
    """``ray.num_learners: 2`` (half a CPU each, beside one runner, on 2 CPUs): two PPO iterations on two remote
    learners (torch DDP over gloo); each learner gets half the train batch and both hold the same weights."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS, NUM_ENV_STEPS_SAMPLED

    from training.config.rllib_settings import ppo_training_kwargs
    from training.rllib.backend import algorithm_config, register_envs, start_ray

    cfg = load_config(
        _config(
            tmp_path,
            ray={"num_learners": 2, "num_cpus_per_learner": 0.5, "num_cpus": 2},
            self_play={"enabled": False},
        )
    )
    assert ppo_training_kwargs(cfg.algo, cfg.ray)["train_batch_size_per_learner"] == 128  # 256 steps per iteration / 2
    assert start_ray(cfg.ray)
    register_envs()
    algo = algorithm_config(cfg).build_algo()
    try:
        assert algo.learner_group.is_remote and len(algo.learner_group._workers) == 2
        before = algo.get_module().get_state()
        results = [algo.train() for _ in range(2)]
        states = algo.learner_group.foreach_learner(lambda learner: learner.module["default_policy"].get_state())
    finally:
        algo.stop()
    assert [r[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED] for r in results] == [256, 256]
    stats = results[-1][LEARNER_RESULTS]["default_policy"]
    assert stats["num_module_steps_trained_lifetime"] >= 512 and np.isfinite(stats["vf_loss"])
    first, second = (s.get() for s in states)
    assert first.keys() == second.keys() == before.keys()
    assert all(np.array_equal(first[k], second[k]) for k in first)  # DDP: the learners' weights agree
    assert any(not np.array_equal(first[k], before[k]) for k in first)  # and they trained


# --------------------------------------------------------------------------- the learner's batch in bulk (PPO)


def _local_episodes(cfg: Any) -> list[Any]:
    """One iteration of ``cfg``'s episodes (``train_batch_size(cfg.algo, cfg.ray)`` env steps) from a local env runner
    (RLlib's ``SingleAgentEnvRunner``, or the runner class ``ray.sampler`` names; no Ray started), as
    benchmarks/learner_rate.py samples its batch."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from training.config.rllib_settings import train_batch_size
    from training.rllib.backend import algorithm_config, register_envs

    register_envs()
    config = algorithm_config(cfg)
    runner = (config.env_runner_cls or SingleAgentEnvRunner)(config=config, worker_index=0)
    try:
        return runner.sample(num_timesteps=train_batch_size(cfg.algo, cfg.ray), force_reset=True)
    finally:
        runner.stop()


def test_learner_pipeline_is_bulk_for_single_agent_ppo_only() -> None:
    from training.rllib.backend import learner_pipeline
    from training.rllib.learner_connector import BulkPPOBatch

    cfg = load_config(SMOKE, ["self_play.enabled=false"])
    single = learner_pipeline(cfg.algo, cfg.self_play, cfg.ray)
    assert single["add_default_connectors_to_learner_pipeline"] is False
    piece = single["learner_connector"](None, None)
    assert isinstance(piece, BulkPPOBatch) and (piece.gamma, piece.lambda_) == (0.99, 0.95)
    league, appo = load_config(SMOKE), load_config(SMOKE, ["self_play.enabled=false", "ray.algorithm=appo"])
    # the league (multi-agent) and APPO: RLlib's pipeline
    assert learner_pipeline(league.algo, league.self_play, league.ray) == {}
    assert learner_pipeline(appo.algo, appo.self_play, appo.ray) == {}


def test_bulk_batch_matches_rllib_default_pipeline() -> None:
    """On the same sampled episodes, BulkPPOBatch's rows are RLlib's default pipeline's unmasked rows (its artificial
    bootstrap rows left out): the same actions, log-probs, behaviour logits, GAE value targets, and the card
    features of the same observations; advantages standardised over the real rows only."""
    import copy

    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    from training.features import hand_features_numpy
    from training.rllib.backend import algorithm_config

    cfg = load_config(
        SMOKE,
        ["self_play.enabled=false", "ray.num_env_runners=0", "ray.num_envs_per_env_runner=8", "algo.n_steps=32"],
    )
    episodes = _local_episodes(cfg)
    assert sum(e.is_terminated for e in episodes) > 0 and any(not e.is_terminated for e in episodes)
    ours_config = algorithm_config(cfg)
    spaces = {DEFAULT_MODULE_ID: (episodes[0].observation_space, episodes[0].action_space)}
    group = ours_config.build_learner_group(spaces=spaces)
    try:
        learner = group._learner
        default = ours_config.copy(copy_frozen=False).training(
            learner_connector=None, add_default_connectors_to_learner_pipeline=True
        )
        reference = default.build_learner_connector(None, None)
        from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate, GeneralAdvantageEstimation

        reference.prepend(AddOneTsToEpisodesAndTruncate())  # as PPOLearner.build adds them
        reference.append(GeneralAdvantageEstimation(gamma=0.99, lambda_=0.95))

        def run(pipeline: Any) -> dict[str, Any]:
            out = pipeline(rl_module=learner.module, batch={}, episodes=copy.deepcopy(episodes), shared_data={})
            return {k: v.numpy() if hasattr(v, "numpy") else v for k, v in out[DEFAULT_MODULE_ID].items()}

        ref, ours = run(reference), run(learner._learner_connector)
    finally:
        group.shutdown()
    keep = ref[Columns.LOSS_MASK].astype(bool)
    n = sum(len(e) for e in episodes)
    assert keep.sum() == n and len(keep) == n + len(episodes) and Columns.LOSS_MASK not in ours
    for column in (Columns.ACTIONS, Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS):
        np.testing.assert_array_equal(ours[column], ref[column][keep])
    np.testing.assert_allclose(
        ours[Postprocessing.VALUE_TARGETS], ref[Postprocessing.VALUE_TARGETS][keep], rtol=1e-5, atol=1e-4
    )
    obs = ref[Columns.OBS][OBS_KEY].numpy()[keep]
    np.testing.assert_array_equal(ours[Columns.OBS][OBS_KEY].numpy(), hand_features_numpy(obs))
    np.testing.assert_array_equal(ours[Columns.OBS][MASK_KEY].numpy(), ref[Columns.OBS][MASK_KEY].numpy()[keep])
    adv = ours[Postprocessing.ADVANTAGES]
    assert abs(adv.mean()) < 1e-5 and abs(adv.std() - 1) < 1e-3
    assert np.corrcoef(adv, ref[Postprocessing.ADVANTAGES][keep])[0, 1] > 0.999


def test_gae_stops_at_chunk_ends_and_bootstraps_truncated_chunks() -> None:
    from training.rllib.learner_connector import gae

    # chunk 0: 2 steps, truncated (bootstrap 10); chunk 1: 1 step, terminated (bootstrap ignored)
    values = np.array([1.0, 2.0, 3.0], np.float32)
    rewards = np.array([0.5, -1.0, 4.0], np.float32)
    adv = gae(values, np.array([10.0, 99.0], np.float32), rewards, np.array([2, 1]), np.array([False, True]), 0.9, 0.5)
    d1 = -1.0 + 0.9 * 10.0 - 2.0
    d0 = 0.5 + 0.9 * 2.0 - 1.0
    np.testing.assert_allclose(adv, [d0 + 0.9 * 0.5 * d1, d1, 4.0 - 3.0], rtol=1e-6)
    with pytest.raises(ValueError, match="must be >= 1 and sum to 3"):
        gae(values, values[:2], rewards, np.array([2, 2]), np.array([False, True]), 0.9, 0.5)


def test_appo_league_run_end_to_end(tmp_path: Path) -> None:
    """``python -m training.train`` with ``ray.algorithm: appo`` on the smoke config's league (self-play snapshots):
    APPO's first iterations may come back before any sample (the loop waits for them); the run reaches its budget,
    and its report, checkpoint and final model (played in the arena: no illegal action) are there."""
    import json

    from test_rllib import _run_dir, _train

    out = _train(
        str(SMOKE), "--no-progress", "--set", f"train.output_dir={tmp_path}", "--set", "ray.algorithm=appo",
        "--set", "eval.every=1000000",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    run = _run_dir(tmp_path)
    report = (run / "report.md").read_text()
    assert "(Ray RLlib APPO)" in report and "Illegal actions: 0" in report
    last = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    progress = json.loads((last / "progress.json").read_text())
    assert progress["steps"] >= 512 and progress["iterations"] >= 1 and progress["snapshots"] >= 1
    assert (run / "final_model").is_dir() and len(list((run / "pool").iterdir())) >= 1
