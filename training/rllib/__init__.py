"""Ray RLlib as a second training backend (``train.backend: rllib``): its config checks and PPO settings are in
:mod:`training.config.checks` and :mod:`training.config.rllib_settings` (checked before Ray starts), :mod:`.module`
(the card policy as an RLModule), :mod:`.backend` (the run), :mod:`.self_play` (self-play through the policy mapping),
:mod:`.batched_runner` (env runners on the batched engine, ``ray.sampler: batched``), :mod:`.rllib_agents`
(``rllib:PATH`` agents, no Ray started)."""
