"""One run from a composed config: build, plan, ask (jobs, worker processes), store, fingerprints,
accounting of invocations, dry runs and rescoring."""
