"""Sources of card data, run in the panel process: HLML and NVML in-process, the long-lived hl-smi child, sysfs, the host row."""
