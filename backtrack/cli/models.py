"""The command line's models: the local target it loads and the drafter it builds for a provider
(in the provider's wire shape, backtrack.wire), watched by the progress display."""

from __future__ import annotations

import argparse
import contextlib
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backtrack.cli.errors import CommandError
from backtrack.cli.progress import Progress
from backtrack.local_drafter import LocalDrafter
from backtrack.wire.anthropic_messages import AnthropicMessages
from backtrack.wire.openai_chat import OpenAIChat
from backtrack.wire.openai_completions import OpenAICompletions
from backtrack.wire.shape import Shape
from local_target.errors import TargetError
from local_target.loading import load_pretrained, pick_device
from providers.base import Capabilities, Drafter, DraftRequest, DraftStream

# `--target vllm:URL`: corrections on a vLLM server (local_target.vllm_target)
VLLM = "vllm:"

if TYPE_CHECKING:  # they import torch: `backtrack --help` must not wait for it
    from local_target import LocalTarget, Target, TargetSession


@contextlib.contextmanager
def _no_transformers_bars() -> Iterator[None]:
    """transformers' own progress bars off (they would tear through ours), then as they were."""
    from transformers.utils import logging

    was_on = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if was_on:
            logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def check_device(spec: str | None) -> None:
    """A device torch knows and this machine has (None: chosen later, CUDA when present)."""
    if spec is None:
        return
    import torch

    try:
        device = torch.device(spec)
    except RuntimeError as exc:
        raise CommandError(f"--device {spec}: {exc}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise CommandError(f"--device {spec}: CUDA is not available here")


def load_target(args: argparse.Namespace, progress: Progress) -> Target:
    """The target: SmolLM2 in process by default, a transformers model folder (`--target DIR`),
    or a vLLM server with backtrack's logits processor (`--target vllm:URL`)."""
    from local_target import LocalTarget

    if args.target is not None and args.target.startswith(VLLM):
        return vllm_target(args.target.removeprefix(VLLM), args.tokenizer, args.device, progress)
    if args.tokenizer is not None:
        raise CommandError("--tokenizer goes with --target vllm:URL (a model folder has its own)")
    if args.target is None:
        with progress.step("loading the target model, SmolLM2-135M-Instruct"):
            check_device(args.device)
            with _no_transformers_bars():
                return LocalTarget.default(device=args.device, progress=progress.note)
    folder = Path(args.target)
    if not (folder / "config.json").is_file():
        raise CommandError(f"--target {folder}: not a transformers model folder (no config.json)")
    with progress.step(f"loading the target model from {folder}"), _no_transformers_bars():
        check_device(args.device)
        try:
            model, tokenizer = load_pretrained(folder, device=pick_device(args.device))
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load the target model from {folder}: {exc}") from exc
        return LocalTarget(model, tokenizer)


def vllm_target(url: str, tokenizer: str | None, device: str | None, progress: Progress) -> Target:
    """The vLLM server at `url` (its OpenAI-compatible root) as target, with the tokenizer of the
    model it serves (`tokenizer`, a folder; default: the SmolLM2 copy the server script serves)."""
    from local_target.loading import converted_smollm2
    from local_target.vllm_target import VllmTarget

    if device is not None:
        raise CommandError("--device is the vLLM server's to choose with --target vllm:URL")
    if not url.startswith(("http://", "https://")):
        raise CommandError(f"--target vllm:URL takes an http:// or https:// URL, not {url!r}")
    base = url.rstrip("/")
    base = base if base.endswith("/v1") else f"{base}/v1"
    with progress.step(f"connecting to the vLLM target at {base}"), _no_transformers_bars():
        folder = Path(tokenizer) if tokenizer is not None else converted_smollm2(progress.note)
        return VllmTarget(base, folder)


def sdk_client(kind: str, args: argparse.Namespace) -> Any:
    """A sync SDK client. Retries are guide()'s (per round, counted in the trace), not the SDK's;
    each request gives up after `--timeout` seconds without progress (the SDKs' own default, 600 s
    for each of guide()'s attempts, would hang the command on a stalled server)."""
    try:
        sdk = importlib.import_module(kind)
    except ImportError:
        raise CommandError(
            f"the {kind} provider needs the {kind} package: pip install {kind}"
        ) from None
    cls = sdk.OpenAI if kind == "openai" else sdk.Anthropic
    options: dict[str, Any] = {"max_retries": 0, "timeout": args.timeout}
    if args.base_url:
        options["base_url"] = args.base_url
    return cls(**options)


def drafter_for(
    args: argparse.Namespace, kind: str, model: str, target: Target, client: Any
) -> Drafter:
    """The drafter for the provider: on the target for the local one, else through `client`,
    its SDK client (`sdk_client`)."""
    from local_target import LocalTarget

    if kind == "local":
        if not isinstance(target, LocalTarget):
            raise CommandError("the local provider drafts on an in-process target, not vllm:URL")
        return LocalDrafter(target)
    shape: Shape
    if kind == "anthropic":
        shape = AnthropicMessages()
    elif args.completions:
        shape = OpenAICompletions()
    else:
        shape = OpenAIChat()
    return shape.drafter(client, model)


class Watched:
    """A drafter that reports each draft round to the progress display, then drafts as usual."""

    def __init__(self, drafter: Drafter, progress: Progress, name: str) -> None:
        self.drafter = drafter
        self.progress = progress
        self.name = name
        self.drafts = 0

    @property
    def capabilities(self) -> Capabilities:
        return self.drafter.capabilities  # may change between rounds (a refused prefill)

    def draft(self, request: DraftRequest) -> DraftStream:
        self.drafts += 1
        committed = len(request.prefix)
        self.progress.status(f"draft {self.drafts} by {self.name}, {committed} characters kept")
        return self.drafter.draft(request)


class WatchedLocal(Watched):
    """Watched, for a drafter on the target's own model: it stays a SessionDrafter, so guide()
    still drafts in the target's session (one KV cache)."""

    def __init__(self, drafter: LocalDrafter, progress: Progress, name: str) -> None:
        super().__init__(drafter, progress, name)
        self.local = drafter

    @property
    def target(self) -> LocalTarget:
        return self.local.target

    def in_session(self, session: TargetSession) -> Watched:
        watched = Watched(self.local.in_session(session), self.progress, self.name)
        watched.drafts = self.drafts
        return watched


def watched(drafter: Drafter, progress: Progress, name: str) -> Watched:
    """`drafter` reporting its rounds to `progress`."""
    if isinstance(drafter, LocalDrafter):
        return WatchedLocal(drafter, progress, name)
    return Watched(drafter, progress, name)
