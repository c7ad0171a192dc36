"""A tiny llama-architecture GGUF model, written here with the `gguf` package (random weights,
nothing downloaded), and its logits through llama-cpp-python on the CPU and on the GPU.

  python llama_tiny_model.py write MODEL.gguf           # 2 layers, 128 wide, 256 tokens, f32
  python llama_tiny_model.py logits MODEL.gguf N OUT.npy  # n_gpu_layers=N (-1: all), logits of PROMPT
  python llama_tiny_model.py compare CPU.npy GPU.npy      # the largest difference, within TOL

The vocabulary is a plain SentencePiece-style list (control tokens 0-2, then one token per byte
value's spelling) so llama.cpp loads it as a `llama` vocabulary; the prompt is given as token
ids, so no tokenizer behaviour is under test. f32 weights keep the CPU and CUDA paths close:
the tolerance is relative to the largest logit.
"""

from __future__ import annotations

import sys

import numpy as np

N_VOCAB, N_EMBD, N_FF, N_LAYER, N_HEAD, N_CTX = 256, 128, 256, 2, 4, 128
PROMPT = [1, 17, 42, 99, 7, 200, 13, 64, 5, 128]
TOL = 5e-3  # of the largest absolute logit (cuBLAS and the CPU sum in other orders: 0.1 % seen)


def write(path: str) -> None:
    import gguf

    rng = np.random.default_rng(20261128)

    def w(*shape: int, scale: float = 0.05) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    out = gguf.GGUFWriter(path, "llama")
    out.add_context_length(N_CTX)
    out.add_embedding_length(N_EMBD)
    out.add_block_count(N_LAYER)
    out.add_feed_forward_length(N_FF)
    out.add_head_count(N_HEAD)
    out.add_head_count_kv(N_HEAD)
    out.add_layer_norm_rms_eps(1e-5)
    out.add_rope_dimension_count(N_EMBD // N_HEAD)
    out.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(N_VOCAB - 3)]
    out.add_token_list(tokens)
    out.add_token_scores([0.0] * N_VOCAB)
    out.add_token_types([2, 3, 3] + [6] * (N_VOCAB - 3))  # unknown, control, control, byte
    out.add_bos_token_id(1)
    out.add_eos_token_id(2)
    out.add_unk_token_id(0)
    out.add_tensor("token_embd.weight", w(N_VOCAB, N_EMBD, scale=1.0))
    out.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    out.add_tensor("output.weight", w(N_VOCAB, N_EMBD))
    for i in range(N_LAYER):
        b = f"blk.{i}."
        out.add_tensor(b + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            out.add_tensor(b + name + ".weight", w(N_EMBD, N_EMBD))
        out.add_tensor(b + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        out.add_tensor(b + "ffn_gate.weight", w(N_FF, N_EMBD))
        out.add_tensor(b + "ffn_up.weight", w(N_FF, N_EMBD))
        out.add_tensor(b + "ffn_down.weight", w(N_EMBD, N_FF))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def logits(path: str, n_gpu_layers: int, out: str) -> None:
    from llama_cpp import Llama

    llm = Llama(model_path=path, n_gpu_layers=n_gpu_layers, n_ctx=64, n_batch=64, logits_all=True,
                seed=0, verbose=True)
    llm.eval(PROMPT)
    np.save(out, np.array(llm.scores[: len(PROMPT)], dtype=np.float32))


def compare(cpu: str, gpu: str) -> int:
    a, b = np.load(cpu), np.load(gpu)
    assert a.shape == b.shape == (len(PROMPT), N_VOCAB), (a.shape, b.shape)
    assert np.isfinite(a).all() and np.isfinite(b).all()
    scale = float(np.abs(a).max())
    diff = float(np.abs(a - b).max())
    same_top = int((a.argmax(axis=1) == b.argmax(axis=1)).sum())
    ok = diff <= TOL * scale and scale > 0
    print(f"logits {a.shape}: largest |logit| {scale:.4f}, largest |cpu - gpu| {diff:.2e} "
          f"(tolerance {TOL * scale:.2e}), same top token at {same_top}/{len(PROMPT)} positions: "
          f"{'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "write":
        write(args[0])
    elif cmd == "logits":
        logits(args[0], int(args[1]), args[2])
    elif cmd == "compare":
        sys.exit(compare(args[0], args[1]))
    else:
        sys.exit(f"unknown command {cmd}")
