"""Every check of the checklist, in display order. Ids are stable: scripts read them from `--json`."""

from __future__ import annotations

from gaudi_tui.core.doctor.checks import cluster, envvars, host, hub, network, stack
from gaudi_tui.core.doctor.model import Check

ALL_CHECKS: tuple[Check, ...] = (
    Check("driver.loaded", "Gaudi kernel driver", host.driver_loaded),
    Check("hlsmi.present", "hl-smi installed", host.hlsmi_present),
    Check("cards.detected", "Cards in the device map", host.cards_detected),
    Check("host.container", "Container", host.host_container),
    Check("plugin.importable", "habana_frameworks imports", stack.plugin_importable, isolated=True),
    Check("torch.habana_build", "torch is Intel's Habana build", stack.torch_habana_build),
    Check("plugin.driver_match", "Plugin matches the driver", stack.plugin_driver_match),
    Check("accelerate.version", "Accelerate ≥ 1.5.0", stack.accelerate_version),
    Check(
        "transformers.hpu_available",
        "is_torch_hpu_available()",
        stack.transformers_hpu_available,
        isolated=True,
    ),
    Check("env.int64", "PT_ENABLE_INT64_SUPPORT", envvars.env_int64),
    Check("env.lazy_mode", "PT_HPU_LAZY_MODE", envvars.env_lazy_mode),
    Check("env.visible_modules", "HABANA_VISIBLE_MODULES / _DEVICES", envvars.env_visible_modules),
    Check("cards.busy", "Cards held by other processes", host.cards_busy),
    Check("hccl.available", "HCCL for multi-card jobs", stack.hccl_available, isolated=True),
    Check("nic.external_up", "Scale-out ports up", network.external_ports_up),
    Check("ray.hpu_visible", "Ray sees the host's HPUs", cluster.ray_hpu_visible, isolated=True),
    Check("bnb.gaudi", "bitsandbytes on Gaudi", stack.bnb_gaudi),
    Check("peft.installed", "PEFT installed", stack.peft_installed),
    Check("hf.cache_space", "Hugging Face cache space", hub.hf_cache_space),
    Check("hf.hub_reachable", "Hub reachable or offline", hub.hf_hub_reachable),
    Check("hf.token", "Hugging Face token", hub.hf_token),
)


def by_id() -> dict[str, Check]:
    return {check.id: check for check in ALL_CHECKS}
