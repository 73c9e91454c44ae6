"""One model interface: typed requests/results (:mod:`.api`), the Hugging Face causal LM
(:mod:`.hf`) with its encoding rule (:mod:`.encoding`), loader (:mod:`.load`) and packed scoring
engine (:mod:`.packed`), and the request-caching wrapper (:mod:`.cache`)."""

from factprobe.lm.api import (
    LM,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    SentenceRequest,
    TopkRequest,
    TopkResult,
)
from factprobe.lm.cache import CachingLM, RequestCache
from factprobe.lm.encoding import NO_SPACE_LANGS
from factprobe.lm.hf import HFCausalLM
from factprobe.lm.load import BUILTIN_CONTROL, ModelLoadError, ModelSpec

__all__ = [
    "BUILTIN_CONTROL",
    "LM",
    "NO_SPACE_LANGS",
    "CachingLM",
    "GenerateRequest",
    "GenerateResult",
    "HFCausalLM",
    "LoglikRequest",
    "LoglikResult",
    "ModelLoadError",
    "ModelSpec",
    "RequestCache",
    "SentenceRequest",
    "TopkRequest",
    "TopkResult",
]
