"""Run weaver-core's trainer (``weaver ...``) with its train, validation and test loaders served by lstm_data.

Every argument not listed below goes to weaver-core as given, so a weaver command
keeps its options: ``lstm-data weaver --data-train 'data/*.root' --data-config
cfg.yaml --network-config net.py --num-epochs 20 --batch-size 512 ...``. weaver
builds the model, the optimizer and runs its training loop; the loaders are
lstm_data's (``lstm_data.adapters.weaver``): the same rows and tensors as weaver's,
and with ``--shuffle false`` the same batches as weaver reading its files in order.
Needs weaver-core and torch (``pip install 'lstm_data[weaver,torch]'``).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_arguments", "run", "TAKES_OTHER_ARGUMENTS"]

#: the arguments this command does not know go to weaver (``args.other``)
TAKES_OTHER_ARGUMENTS = True


def _shuffle(text: str) -> bool | str:
    choices: dict[str, bool | str] = {"true": True, "false": False, "block": "block"}
    value = choices.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"must be true, false or block, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shuffle", type=_shuffle, default=True, metavar="{true,false,block}",
                        help="order of the training batches: a full shuffle each epoch (true, the default), "
                             "a block shuffle (block), or weaver's file order (false)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the shuffle (default: 0)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="threads reading the files and building batches ahead (default: 1)")


def run(args: argparse.Namespace) -> int:
    from lstm_data._util.optional import require
    from lstm_data.adapters import weaver as adapter

    try:
        train: Any = require("running weaver-core's trainer", "weaver", "weaver.train")
    except ImportError as exc:
        print(f"lstm-data weaver: error: {exc}", file=sys.stderr)
        return 1
    options = adapter.LoaderOptions(shuffle=args.shuffle, seed=args.seed, threads=args.threads)
    saved = train.train_load, train.test_load, sys.argv
    train.train_load = lambda weaver_args: adapter.train_load(weaver_args, options)
    train.test_load = lambda weaver_args: adapter.test_load(weaver_args, options)
    sys.argv = ["weaver", *args.other]
    try:
        train.main()
    finally:
        train.train_load, train.test_load, sys.argv = saved
    return 0
