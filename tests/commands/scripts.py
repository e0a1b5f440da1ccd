"""Training scripts as a user writes them, for the command-job tests and bench/command.py.

Each is plain text written into the test's folder and run as the user would run it; none imports
gaudi_tui. They train the embedded demo model (its folder is passed on the command line) on a small
text file, offline.
"""

from __future__ import annotations

from pathlib import Path

HF_TRAINER = '''\
"""A Trainer script with its own argparse and dataset file."""
import argparse

from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling,
                          Trainer, TrainingArguments)

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", required=True)
parser.add_argument("--train_file", required=True)
parser.add_argument("--output_dir", required=True)
parser.add_argument("--max_steps", type=int, default=20)
parser.add_argument("--logging_steps", type=int, default=2)
parser.add_argument("--save_steps", type=int, default=0)
parser.add_argument("--resume_from_checkpoint", default=None)
parser.add_argument("--disable_tqdm", action="store_true")
parser.add_argument("--step_sleep", type=float, default=0.0)
args = parser.parse_args()

tok = AutoTokenizer.from_pretrained(args.model_name_or_path)
tok.pad_token = tok.pad_token or tok.eos_token
model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
lines = [l for l in open(args.train_file, encoding="utf-8").read().splitlines() if l.strip()]
rows = Dataset.from_dict(dict(tok(lines, truncation=True, max_length=32)))


class Slow(Trainer):  # a subclass, as TRL's trainers are
    def training_step(self, *a, **k):
        if args.step_sleep:
            import time
            time.sleep(args.step_sleep)
        return super().training_step(*a, **k)


trainer = Slow(
    model=model,
    args=TrainingArguments(
        output_dir=args.output_dir, max_steps=args.max_steps, logging_steps=args.logging_steps,
        per_device_train_batch_size=4, learning_rate=1e-3, use_cpu=True, report_to="none",
        save_strategy="steps" if args.save_steps else "no", save_steps=args.save_steps or 500,
        disable_tqdm=args.disable_tqdm, seed=1,
    ),
    train_dataset=rows,
    data_collator=DataCollatorForLanguageModeling(tok, mlm=False),
)
trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
print("script finished after train()", flush=True)
'''

JSON_LOOP = '''\
"""A plain torch loop that prints one JSON object per step."""
import json
import sys

import torch

torch.manual_seed(0)
steps = int(sys.argv[1])
w = torch.zeros(4, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
target = torch.tensor([1.0, -2.0, 3.0, 0.5])
for step in range(1, steps + 1):
    loss = ((w - target) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(json.dumps({"step": step, "loss": loss.item(), "lr": 0.1}), flush=True)
'''

CRASHING = '''\
"""Fails the way a real script does: a traceback ending in an exception line."""
import torch

x = torch.zeros(2, 3)
y = torch.zeros(4, 5)
print("starting", flush=True)
print(x @ y)
'''

TORCHRUN_LOOP = '''\
"""Two ranks under torchrun: a gloo all-reduce per step; rank 0 prints the loss as JSON."""
import json
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
w = torch.zeros(2, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.2)
for step in range(1, 7):
    loss = ((w - torch.tensor([1.0, 2.0])) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    dist.all_reduce(w.grad)
    opt.step()
    if rank == 0:
        print(json.dumps({"step": step, "loss": loss.item(), "world": dist.get_world_size()}), flush=True)
dist.destroy_process_group()
'''


ACCELERATE_LOOP = '''\
"""An accelerate-style loop (no Trainer): Accelerator.prepare, accelerator.backward, and the main
process prints its metrics as JSON."""
import json

import torch
from accelerate import Accelerator

accelerator = Accelerator(cpu=True)
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
model, opt = accelerator.prepare(model, opt)
x = torch.randn(32, 4)
y = x.sum(1, keepdim=True)
for step in range(1, 9):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    accelerator.backward(loss)
    opt.step()
    accelerator.print(json.dumps({"step": step, "loss": loss.item(), "lr": 0.05}))
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def train_file(folder: Path, lines: int = 64) -> Path:
    path = folder / "train.txt"
    path.write_text(
        "\n".join(f"Gaudi cards train models; line {i} says hl-smi shows the cards." for i in range(lines)),
        encoding="utf-8",
    )
    return path
