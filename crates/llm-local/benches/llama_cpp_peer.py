"""llama.cpp's side of the local generation benchmark (`generation.rs`).

Argument: one JSON object (model, threads, runs, context, prompts, story_prompt, generated).
Prints one JSON object: prompts (a list of {tokens, per_s}, in the order given),
generated_tokens and generated_per_s (medians over `runs` measured runs after one warm-up),
and system_info (the instruction sets llama.cpp's build uses),
measured the way the Rust side measures the embedded engine: prompt tokens over the time to
the first sampled token, and tokens after the first over the time from the first to the
last, greedily. Every run reads its prompt whole: `llm.reset()` first, since `generate`
otherwise reuses the prefix it shares with the previous run's tokens.
"""

import json
import statistics
import sys
import time

from llama_cpp import Llama, llama_print_system_info


def main() -> None:
    spec = json.loads(sys.argv[1])
    llm = Llama(
        model_path=spec["model"],
        n_ctx=spec["context"],
        n_threads=spec["threads"],
        n_threads_batch=spec["threads"],
        n_batch=512,
        verbose=False,
    )
    runs = spec["runs"]

    prompts = []
    for text in spec["prompts"]:
        tokens = llm.tokenize(text.encode(), add_bos=False, special=True)
        rates = []
        for run in range(runs + 1):
            # Prompt processing: the whole prompt, then one sampled token.
            llm.reset()
            started = time.perf_counter()
            for _token in llm.generate(tokens, top_k=1, temp=0.0, reset=True):
                break
            to_first = time.perf_counter() - started
            if run > 0:
                rates.append(len(tokens) / to_first)
        prompts.append({"tokens": len(tokens), "per_s": statistics.median(rates)})

    story_tokens = llm.tokenize(spec["story_prompt"].encode(), add_bos=False, special=True)
    generated = spec["generated"]
    generation_rates = []
    for run in range(runs + 1):
        # Generation: as many tokens as the embedded engine produced (llama.cpp is not
        # stopped at the end of turn, so both count the same number of steps).
        count, first = 0, None
        llm.reset()
        for _token in llm.generate(story_tokens, top_k=1, temp=0.0, reset=True):
            count += 1
            if first is None:
                first = time.perf_counter()
            if count == generated:
                break
        rest = time.perf_counter() - first
        if run > 0:
            generation_rates.append((generated - 1) / rest)

    print(
        json.dumps(
            {
                "prompts": prompts,
                "generated_tokens": generated,
                "generated_per_s": statistics.median(generation_rates),
                "system_info": llama_print_system_info().decode(errors="replace").strip(),
            }
        )
    )


if __name__ == "__main__":
    main()
