"""The OpenAI Agents SDK (`openai-agents`), unchanged, running a one-tool agent against
Tessera's `/openai/v1` with its default model class (the Responses API).

Same environment as check.py (OPENAI_BASE_URL, OPENAI_API_KEY, TESSERA_MODEL, SSL_CERT_FILE).
The agent's tool is a plain Python function; the SDK sends the model's call back as a
`function_call_output` item and asks again until the model answers. Tracing is off (it would
export to OpenAI). Prints a JSON summary; exits 1 if the run fails or the tool never ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    Runner,
    __version__,
    function_tool,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

calls: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    calls.append(city)
    return f"sunny, 21 °C in {city}"


async def main() -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        max_retries=0,
        timeout=300,
    )
    set_default_openai_client(client, use_for_tracing=False)
    # The default model class, given the model as an object: the SDK reads a `/` in a model
    # name as a provider prefix, and Tessera's catalog ids contain one.
    model = OpenAIResponsesModel(model=os.environ["TESSERA_MODEL"], openai_client=client)
    agent = Agent(
        name="Weather",
        instructions="Use the get_weather tool to answer questions about the weather.",
        tools=[get_weather],
        model=model,
        model_settings=ModelSettings(max_tokens=48, temperature=0),
    )
    result = await Runner.run(agent, "What is the weather in Paris?", max_turns=4)
    summary = {
        "client": "openai-agents",
        "version": __version__,
        "tool_calls": calls,
        "final_output": result.final_output,
        "responses": [response.response_id for response in result.raw_responses],
    }
    print(json.dumps(summary, indent=2, default=str))
    if not calls or not result.final_output:
        sys.stderr.write("openai-agents: the tool never ran or the agent gave no answer\n")
        sys.exit(1)


asyncio.run(main())
