"""A merged copy of base + adapter for `transformers serve` (which loads one model folder): PEFT's
`merge_and_unload`, saved once into the serve job's run folder and reused by later attempts. Runs in
the supervisor (imports torch)."""

from __future__ import annotations

import shutil
from pathlib import Path

DONE = ".merged"


def merged(base: str, adapter: Path, into: Path, trust_remote_code: bool = False) -> Path:
    """`into`, holding base + adapter merged (made now unless an earlier attempt finished it)."""
    if (into / DONE).is_file():
        return into
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    work = into.with_name(into.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    model = AutoModelForCausalLM.from_pretrained(base, trust_remote_code=trust_remote_code)
    model = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    model.save_pretrained(work)
    has_tokenizer = any((adapter / n).is_file() for n in ("tokenizer.json", "tokenizer_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(str(adapter) if has_tokenizer else base)
    tokenizer.save_pretrained(work)
    (work / DONE).write_text(f"{base}\n{adapter}\n", encoding="utf-8")
    shutil.rmtree(into, ignore_errors=True)
    work.rename(into)
    return into
