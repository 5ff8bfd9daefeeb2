"""What tests/test_student_dist.py needs of the llm assignment's untouched student notebook."""

# Text of the given cells that use no student code (the help topics split, the provided RoPE and Llama classes): they
# must run in the untouched notebook.
GIVEN_CELLS = ("training_text, held_out_text = split_topics()", "class RotaryEmbedding(nn.Module):",
               "class LlamaBlock(nn.Module):", "class Llama(nn.Module):")
