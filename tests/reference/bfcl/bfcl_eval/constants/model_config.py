# Not part of bfcl-eval: a stub of its model table (which pulls in every model handler), with
# the one entry the AST checker reads: a function-calling model whose tool names had `.`
# replaced by `_`, as `judge bfcl` replaces them.
from dataclasses import dataclass


@dataclass
class ModelConfig:
    underscore_to_dot: bool = False


MODEL_CONFIG_MAPPING = {"judge-bfcl-FC": ModelConfig(underscore_to_dot=True)}
