"""The class grader: every learner's notebook graded in its own sandbox, one gradebook row per exercise.

Not taught; for instructors (docs/instructors.md, "Grading a class")::

    python -m course_lib.grading ~/course --out ~/grading/grades.csv --summary ~/grading/summary.csv \
        --feedback ~/grading/feedback --jobs 2

Apart from the exercise checkers a learner reads (``course_lib.exercises``), which it calls
unchanged. Its pieces:

    cli          the command: finds the submissions, a pool of grading processes, the progress bar
    submissions  which notebooks, whose (student, assignment), graded on which chapter's exercises, in which language
    sandbox      one bubblewrap sandbox per submission (namespaces, read-only runtime, private /tmp)
    seccomp      what a submission may not ask of the kernel: new processes, uncounted shared memory
    learner      the process inside the sandbox: runs the cells, answers the checkers' calls
    session      the grader's side of that process: its CPU time, the learner's functions as proxies
    wire         the messages between the two: plain data only, no pickle
    gradebook    the CSV (escaped, appended as it goes, renamed in at the end), --resume, the summary
    feedback     one Markdown file per submission, and index.csv: whose each file is
"""
