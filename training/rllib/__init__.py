"""Ray RLlib as a second training backend (``train.backend: rllib``): :mod:`.config` (checks, before Ray
starts), :mod:`.module` (the card policy as an RLModule), :mod:`.train` (the run), :mod:`.agent`
(``rllib:PATH`` agents, no Ray started)."""
