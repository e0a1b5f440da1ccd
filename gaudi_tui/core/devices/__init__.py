"""The device map: snapshot model, sources (HLML, hl-smi, NVML, host), parsers, holders, card sets."""
