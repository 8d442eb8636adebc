"""`ftgui audit`: one reference run and one run per fault kind, each compared with the reference
to the bit, with a verdict per fault that a person and a CI pipeline read (no Qt, no TensorFlow).

`plan` draws the runs, `compare` finds the first difference of the logged values, `verdict`
judges each fault, `outputs` writes the JUnit XML, JSON and HTML files, `runner` drives the
supervisors.
"""
