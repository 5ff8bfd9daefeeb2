"""What the course-wide tests of grading/ need of the transformer when it is their vehicle (tests/course_paths.py):
answers and attacks written against its own classes and cells, and what the grader must say about them."""

# A classifier far above the task's default sizes, for the first training task's cell: refused unbuilt, flagged.
BIG_MODEL = '''from course_lib.transformer import VOCAB_SIZE

model = TransformerForSequenceClassification(input_dim=VOCAB_SIZE, embed_dim=256, num_classes=1, num_heads=2,
                                             feedforward_dim=1024, num_layers=4)  # 16 x, 32 x, 2 x the defaults
'''
BIG_MODEL_REFUSED = "embed_dim = 256 is above 64"  # what the report's flag says of BIG_MODEL

# A classifier whose saved weights are too large for the grader to read (50 M weights: 400 MB recorded).
HUGE_MODEL = '''from course_lib.transformer import VOCAB_SIZE
model = TransformerForSequenceClassification(input_dim=VOCAB_SIZE, num_classes=1, embed_dim=1024, num_heads=2,
                                             feedforward_dim=4096, num_layers=4)  # 50 M weights: 400 MB recorded'''

# Sleeping cells put after this check cell re-run in every attempt; once grading gives up, the task answered after
# them is never reached.
SLEEP_AFTER, UNREACHED_AFTER_SLEEP = "check_task_5", 7
