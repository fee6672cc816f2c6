"""oarkit.nlp: text tasks (PaddleNLP); its models, data and Taskflow are built in their own issue."""
