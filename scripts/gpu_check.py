"""GPU check of local_target's KV-cache interface (local_target/kv_cache.py): a 4-layer Llama with
random weights over a GPT-2 tokenizer writes the same greedy corrections on CUDA as on the CPU,
rolls its cache back on CUDA to the same tokens, and raises no warning (warnings are errors).

    python scripts/gpu_check.py TOKENIZER_DIR      # e.g. ~/.cache/backtrack/tokenizers/gpt2

On a lent GPU machine without the internet, carry the wheels of this project's dependencies and
the tokenizer folder, install them with `pip install --no-deps --target DIR`, and put DIR and the
repository on PYTHONPATH. Exit status 0 when every correction matched.
"""

import sys
import time
import warnings

warnings.simplefilter("error")  # any warning of ours (or a deprecated call) fails the check
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM  # noqa: E402

from grammars import Grammar  # noqa: E402
from local_target import LocalTarget  # noqa: E402

print(
    "transformers",
    transformers.__version__,
    "torch",
    torch.__version__,
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU",
)
tok = AutoTokenizer.from_pretrained(sys.argv[1])
torch.manual_seed(0)
cfg = LlamaConfig(
    vocab_size=len(tok),
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    bos_token_id=tok.eos_token_id,
    eos_token_id=tok.eos_token_id,
    tie_word_embeddings=False,
)
base = LlamaForCausalLM(cfg).eval()
cpu = LocalTarget(base, tok)
gpu_model = LlamaForCausalLM(cfg).eval()
gpu_model.load_state_dict(base.state_dict())
gpu_model.to("cuda" if torch.cuda.is_available() else "cpu")
gpu = LocalTarget(gpu_model, tok)
print("cache kwarg:", gpu.cache_api.kwarg, "device:", gpu.device)
cases = [
    ("json", '{"name": "Fel'),
    ("json", '{"a": [1, 2'),
    ("arithmetic", "3 * (4 +"),
    ("csv", "a,b\n1,"),
]
same = 0
for name, text in cases:
    g = Grammar.load(name)
    for until in ("terminal", "complete"):
        a = cpu.correct("Write it.", text, g, max_tokens=24, until=until)
        t0 = time.perf_counter()
        b = gpu.correct("Write it.", text, g, max_tokens=24, until=until)
        dt = time.perf_counter() - t0
        ok = a.tokens == b.tokens
        same += ok
        print(
            f"{name:10} {until:8} same={ok} cpu={a.text!r} gpu={b.text!r}"
            f" ({len(b.tokens)} tokens in {dt * 1000:.0f} ms on the GPU)"
        )
# KV rollback on CUDA: a session moved back and forth gives the same logits as a fresh one
s = gpu.session("Write it.")
g = Grammar.load("json")
first = s.correct('{"a": 1', g, max_tokens=8)
s.correct('{"b": [tr', g, max_tokens=8)
again = s.correct('{"a": 1', g, max_tokens=8)
print("rollback same:", first.tokens == again.tokens)
print(f"RESULT {same}/{2 * len(cases)} identical; rollback {first.tokens == again.tokens}")
sys.exit(0 if same == 2 * len(cases) and first.tokens == again.tokens else 1)
