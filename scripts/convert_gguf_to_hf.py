"""Turn a registry model's GGUF file into a Hugging Face folder that vLLM can load.

Used once by ``scripts/record_vllm_cpu.sh``: vLLM reads safetensors folders, while the embedded
model ships as a quantized GGUF. The weights are dequantized by transformers (``gguf_file=``)
and written with ``save_pretrained``; the tokenizer and its chat template come from the GGUF too.

    python scripts/convert_gguf_to_hf.py smollm2-135m ~/.cache/vcrime-audit/smollm2-135m-hf
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any


def _without_gguf_quantizer(loaded: Any) -> Any:
    """The same weights in a model that transformers will save: a GGUF-loaded model keeps a
    GGUF quantizer (not serializable) even when every tensor was dequantized on load."""
    from transformers import AutoModelForCausalLM

    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=loaded.dtype)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    return plain.eval()


def convert(gguf: Path, out: Path, dtype: str = "float32") -> Path:
    """Write ``out`` (config, safetensors, tokenizer); an existing complete folder is kept."""
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise SystemExit(f"{gguf}: the GGUF carries no chat template (tokenizer.chat_template); "
                         "fix: convert a GGUF that has one, or add options.chat_template to the entry")
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                  dtype=getattr(torch, dtype))
    plain = _without_gguf_quantizer(loaded)
    plain.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="registry name of a GGUF model, e.g. smollm2-135m")
    parser.add_argument("out", type=Path, help="HF folder to write")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    args = parser.parse_args(argv)
    from vcrime_audit.models import ModelError, get_model

    try:
        gguf = get_model(args.model).weights_path()
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if gguf.suffix != ".gguf":
        print(f"error: model '{args.model}' has weights {gguf}, not a .gguf file", file=sys.stderr)
        return 2
    print(convert(gguf, args.out.expanduser(), args.dtype))
    return 0


if __name__ == "__main__":
    sys.exit(main())
