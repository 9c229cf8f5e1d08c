"""benchmarks/ is not collected by the default test run (pyproject testpaths = tests):

    pytest benchmarks/ --benchmark-columns=median,iqr,min,rounds
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchmarks/steps.py
