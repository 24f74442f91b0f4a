"""llama.cpp's side of the local generation benchmark (`generation.rs`).

Argument: one JSON object (model, threads, runs, long_prompt, story_prompt, generated).
Prints one JSON object: prompt_tokens, prompt_per_s, generated_tokens, generated_per_s
(medians over `runs` measured runs after one warm-up), measured the way the Rust side
measures the embedded engine: prompt tokens over the time to the first sampled token, and
tokens after the first over the time from the first to the last, greedily.
"""

import json
import statistics
import sys
import time

from llama_cpp import Llama


def main() -> None:
    spec = json.loads(sys.argv[1])
    llm = Llama(
        model_path=spec["model"],
        n_ctx=2048,
        n_threads=spec["threads"],
        n_threads_batch=spec["threads"],
        n_batch=512,
        verbose=False,
    )
    long_tokens = llm.tokenize(spec["long_prompt"].encode(), add_bos=False, special=True)
    story_tokens = llm.tokenize(spec["story_prompt"].encode(), add_bos=False, special=True)
    generated = spec["generated"]

    prompt_rates, generation_rates = [], []
    for run in range(spec["runs"] + 1):
        # Prompt processing: the whole prompt, then one sampled token.
        started = time.perf_counter()
        for _token in llm.generate(long_tokens, top_k=1, temp=0.0, reset=True):
            break
        to_first = time.perf_counter() - started

        # Generation: as many tokens as the embedded engine produced (llama.cpp is not
        # stopped at the end of turn, so both count the same number of steps).
        count, first = 0, None
        for _token in llm.generate(story_tokens, top_k=1, temp=0.0, reset=True):
            count += 1
            if first is None:
                first = time.perf_counter()
            if count == generated:
                break
        rest = time.perf_counter() - first
        if run == 0:
            continue
        prompt_rates.append(len(long_tokens) / to_first)
        generation_rates.append((generated - 1) / rest)

    print(
        json.dumps(
            {
                "prompt_tokens": len(long_tokens),
                "prompt_per_s": statistics.median(prompt_rates),
                "generated_tokens": generated,
                "generated_per_s": statistics.median(generation_rates),
            }
        )
    )


if __name__ == "__main__":
    main()
