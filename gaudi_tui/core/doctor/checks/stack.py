"""The software stack: Intel's torch and plugin, their match with the driver, Accelerate,
Transformers' HPU detection, HCCL, bitsandbytes and PEFT."""

from __future__ import annotations

import re

from gaudi_tui.core.accelerator import MIN_ACCELERATE_FOR_HPU
from gaudi_tui.core.doctor.child import run_probe
from gaudi_tui.core.doctor.context import CheckContext, Unavailable
from gaudi_tui.core.doctor.model import CheckVerdict, fail, ok, skip, warn
from gaudi_tui.core.versions import at_least, dotted, minor

PLUGIN = "habana-torch-plugin"
N_MINUS_1_SINCE = (1, 17)
BNB_GAUDI_SINCE = (0, 48, 0)
PEFT_MIN = (0, 14)
INSTALL_GAUDI = (
    "Run inside Intel's Gaudi container (vault.habana.ai/gaudi-docker/<release>/…/pytorch-installer-…) "
    "or the installer's venv (`./habanalabs-installer.sh install --type pytorch --venv`), and start "
    "gaudi-tui from that environment."
)
KEEP_TORCH = (
    "Keep Intel's torch when installing anything else: `pip freeze | grep -E '^(torch|habana)' > "
    "constraints.txt`, then `pip install -c constraints.txt …`."
)


def plugin_importable(ctx: CheckContext) -> CheckVerdict:
    facts = run_probe(ctx, "plugin")
    if not facts.get("found"):
        return fail(
            "No module named 'habana_frameworks'",
            f"Intel's PyTorch plugin ({PLUGIN}, imported as habana_frameworks) is not installed for "
            f"{ctx.python}. Without it torch has no 'hpu' device and jobs run on CUDA or CPU. Usual "
            "causes: not inside Intel's container or installer venv, or a `pip install` replaced Intel's "
            "torch and its plugin.",
            INSTALL_GAUDI,
        )
    if not facts.get("imported"):
        return fail(
            f"habana_frameworks is installed but `import habana_frameworks.torch` fails: {facts.get('error')}",
            "The plugin is built against one exact torch build; an import error after installing other "
            "packages usually means pip replaced Intel's torch. Checked in a throwaway child process.",
            f"Reinstall the Gaudi PyTorch packages of your release. {KEEP_TORCH}",
        )
    version = ctx.version(PLUGIN) or facts.get("version") or "version unknown"
    return ok(
        f"habana_frameworks.torch imports ({PLUGIN} {version})",
        f"Imported in a throwaway child process (importing it can acquire a card) from {facts.get('location')}.",
    )


def plugin_driver_match(ctx: CheckContext) -> CheckVerdict:
    plugin = ctx.version(PLUGIN)
    if plugin is None:
        return skip(f"{PLUGIN} is not installed (see plugin.importable)")
    try:
        driver = ctx.snapshot().driver_version
    except Unavailable as exc:
        return skip(f"no driver version: {exc}")
    if not driver:
        return skip("hl-smi reported no driver version (see hlsmi.present)")
    p, d = minor(plugin), minor(driver)
    align = (
        f"Use the software release that matches the driver ({dotted(d)}: Intel's container "
        f"vault.habana.ai/gaudi-docker/{dotted(d)}.x), or update the driver to {dotted(p)}."
    )
    if p == d:
        return ok(f"driver {driver} matches {PLUGIN} {plugin}")
    if len(p) == 2 and len(d) == 2 and p[0] == d[0] and p[1] == d[1] - 1:
        if d >= N_MINUS_1_SINCE:
            return warn(
                f"{PLUGIN} {plugin} is one release behind driver {driver} (N−1)",
                "Since release 1.17 Intel supports software one release older than the driver (N−1); "
                "it works, but misses the fixes of the driver's release.",
                align,
            )
        return fail(
            f"{PLUGIN} {plugin} is one release behind driver {driver}, before N−1 support (1.17)",
            "Before 1.17 software and driver had to match exactly ('1.15.x docker can't run on 1.16.x "
            "driver'); a mismatch fails at device acquire.",
            align,
        )
    return fail(
        f"{PLUGIN} {plugin} does not match driver {driver}",
        "Software and driver must be the same release, or the software one release older (N−1). A "
        "mismatch shows up as 'synStatus=26 [Generic failure] Device acquire failed', graph compile "
        "failures, or optimum-habana's 'has been validated for SynapseAI …' warning.",
        align,
    )


def torch_habana_build(ctx: CheckContext) -> CheckVerdict:
    version = ctx.version("torch")
    if version is None:
        return fail("torch is not installed", "Every model and job needs torch.", INSTALL_GAUDI)
    local = version.partition("+")[2]
    built_for = re.search(r"hpu[._]?(\d+\.\d+(?:\.\d+)?)", local)
    if built_for or "a0+git" in version:
        plugin = ctx.version(PLUGIN)
        if built_for and plugin and minor(built_for.group(1)) != minor(plugin):
            return fail(
                f"torch {version} was built for Gaudi {built_for.group(1)} but {PLUGIN} is {plugin}",
                "Intel builds torch and the plugin together for each release; mixing releases breaks "
                "`import habana_frameworks.torch`.",
                f"Reinstall both from one release. {KEEP_TORCH}",
            )
        return ok(f"torch {version} is Intel's Habana build")
    kind = (
        "a CPU build"
        if local.startswith("cpu")
        else "a CUDA build"
        if local.startswith("cu")
        else "a PyPI build"
    )
    return fail(
        f"torch {version} is not Intel's Habana build ({kind})",
        "Gaudi needs the torch Intel builds for each Gaudi release; its version carries a local tag such "
        "as 2.6.0+hpu.1.20.0.543.git4952fce. A package that requires a newer torch makes pip replace it "
        "silently with a PyPI build, after which habana_frameworks no longer loads.",
        f"{INSTALL_GAUDI} {KEEP_TORCH}",
    )


def accelerate_version(ctx: CheckContext) -> CheckVerdict:
    version = ctx.version("accelerate")
    floor = dotted(MIN_ACCELERATE_FOR_HPU)
    silent = (
        f"Transformers' is_torch_hpu_available() returns False, without any warning, when Accelerate is "
        f"older than {floor}: Trainer, pipelines and this panel then run on CPU even on a Gaudi host."
    )
    fix = f"pip install -U 'accelerate>={floor}'   ({KEEP_TORCH})"
    if version is None:
        return fail("accelerate is not installed", f"Trainer needs Accelerate. {silent}", fix)
    if not at_least(version, MIN_ACCELERATE_FOR_HPU):
        return fail(
            f"accelerate {version} < {floor}: is_torch_hpu_available() is silently False", silent, fix
        )
    return ok(f"accelerate {version} (≥ {floor}, which is_torch_hpu_available() needs)")


def transformers_hpu_available(ctx: CheckContext) -> CheckVerdict:
    facts = run_probe(ctx, "hpu")
    if "transformers_error" in facts:
        return fail(
            f"transformers cannot be imported: {facts['transformers_error']}",
            "Checked in a throwaway child process.",
            "pip install 'transformers>=4.51'",
        )
    if facts.get("available"):
        return ok(
            f"is_torch_hpu_available() is True: {facts.get('count')} card(s) ({facts.get('name')})",
            "Checked in a throwaway child process: the call imports habana_frameworks (which can acquire "
            "a card) and patches torch, so the panel never makes it itself.",
        )
    accelerate = facts.get("accelerate")
    floor = dotted(MIN_ACCELERATE_FOR_HPU)
    if not facts.get("habana_frameworks"):
        why, fix = "habana_frameworks is not installed (see plugin.importable)", INSTALL_GAUDI
    elif not at_least(str(accelerate or ""), MIN_ACCELERATE_FOR_HPU):
        why = f"accelerate {accelerate or 'is missing'} < {floor} makes it silently False (see accelerate.version)"
        fix = f"pip install -U 'accelerate>={floor}'"
    elif facts.get("error"):
        why, fix = f"it raised {facts['error']}", "See plugin.importable and plugin.driver_match."
    else:
        why = "torch.hpu.is_available() is False: no card is visible to this process"
        fix = "See driver.loaded, cards.busy and env.visible_modules."
    return fail(
        f"is_torch_hpu_available() is False: {why}",
        "Trainer, TrainingArguments and pipelines use 'hpu' only when this returns True; otherwise they "
        "silently use CUDA or CPU. Checked in a throwaway child process.",
        fix,
    )


def hccl_available(ctx: CheckContext) -> CheckVerdict:
    facts = run_probe(ctx, "hccl")
    if not facts.get("found"):
        return skip("habana_frameworks is not installed (see plugin.importable)")
    if not facts.get("imported"):
        return fail(
            f"`import habana_frameworks.torch.distributed.hccl` fails: {facts.get('error')}",
            "Multi-card jobs talk over HCCL (ddp_backend='hccl'); without it only single-card jobs run.",
            f"Reinstall the Gaudi PyTorch packages of your release. {KEEP_TORCH}",
        )
    return ok(
        "habana_frameworks.torch.distributed.hccl imports: multi-card jobs can use ddp_backend='hccl'",
        "Checked in a throwaway child process. Scale-out across hosts also needs Gaudi NICs or a host NIC "
        "with libfabric; Intel's ReportNCheck tool checks those.",
    )


def bnb_gaudi(ctx: CheckContext) -> CheckVerdict:
    version = ctx.version("bitsandbytes")
    since = dotted(BNB_GAUDI_SINCE)
    fix = f"pip install -U 'bitsandbytes>={since}'   ({KEEP_TORCH})"
    can = (
        "On Gaudi, bitsandbytes has one HPU kernel: 4-bit NF4 dequantization (load_in_4bit with "
        "bnb_4bit_quant_type='nf4', QLoRA). FP4 fails with \"HPU backend only supports quant_type 'nf4'\", "
        "8-bit runs bnb's generic PyTorch code, and optimizers are not implemented. It needs Gaudi 2 or 3 "
        f"with Gaudi software ≥ 1.21 (bitsandbytes {since} release notes)."
    )
    if version is None:
        return warn("bitsandbytes is not installed: no 4-bit (NF4) loading and no QLoRA", can, fix)
    if not at_least(version, BNB_GAUDI_SINCE):
        return warn(f"bitsandbytes {version} predates Gaudi support ({since})", can, fix)
    try:
        gaudi1 = any(d.product == "Gaudi" for d in ctx.snapshot().devices)
    except Unavailable:
        gaudi1 = False
    if gaudi1:
        return warn(
            f"bitsandbytes {version} is installed, but first-generation Gaudi has no 4-bit support",
            can,
            "Load models in bf16 on Gaudi 1; use Gaudi 2 or 3 for NF4/QLoRA.",
        )
    return ok(f"bitsandbytes {version}: on Gaudi, 4-bit NF4 only", can)


def peft_installed(ctx: CheckContext) -> CheckVerdict:
    version = ctx.version("peft")
    fix = f"pip install -U 'peft>={dotted(PEFT_MIN)}'   ({KEEP_TORCH})"
    why = "PEFT adds the LoRA adapters of LoRA and QLoRA jobs."
    if version is None:
        return warn("peft is not installed: LoRA and QLoRA jobs cannot run", why, fix)
    if not at_least(version, PEFT_MIN):
        return warn(f"peft {version} is older than {dotted(PEFT_MIN)}", why, fix)
    return ok(f"peft {version}", why)
