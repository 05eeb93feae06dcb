"""The rating page's parts (the page itself is app/views/annotate.py): form.py the form's model (which
questions, their keys, the answers, the submission), item.py the item on screen (the study, its context
read once, resume after a reload), render.py drawing the item (context, responses A/B, questions,
actions, page script), actions.py the buttons (submit, a revision too; skip; flag), crowd_finish.py a
crowd worker's countdown, time-over and completion screens."""
