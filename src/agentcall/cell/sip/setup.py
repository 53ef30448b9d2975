"""Build the SIP-mode cell from environment variables (see docs/cell-sip.md).

=============================  ===============================================
CELL_SIP_CREDENTIALS           JSON file {trunk_id: {username, password}}
CELL_SIP_BIND_HOST             local address of SIP and RTP sockets (127.0.0.1)
CELL_SIP_ADVERTISED_HOST       address written in Via/Contact/SDP (behind NAT)
CELL_RTP_TIMEOUT_MS            no RTP for this long ends the call (10000)
CELL_LLM_<REF>_BASE_URL        an OpenAI-compatible LLM offered as provider_ref
CELL_LLM_<REF>_API_KEY         <ref> (lower case, ``_`` -> ``-``), its key
CELL_LLM_<REF>_MODEL           and its default model
=============================  ===============================================

Offered providers: ``mock`` (all kinds), TTS ``espeak-ng``, ASR ``pocketsphinx``,
and each configured LLM.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agentcall.cell.agent.mock import mock_registry
from agentcall.cell.agent.providers import ASRProvider, LLMProvider, ProviderRegistry, TTSProvider
from agentcall.cell.agent.providers_espeak import EspeakTTS
from agentcall.cell.agent.providers_openai import OpenAIChatLLM, OpenAISettings
from agentcall.cell.agent.providers_sphinx import PocketsphinxASR
from agentcall.cell.errors import CellConfigError, SipConfigError
from agentcall.cell.sip.driver import SipDriver
from agentcall.cell.sip.trunk import load_credentials

ESPEAK = "espeak-ng"
POCKETSPHINX = "pocketsphinx"


def llm_settings(env: Mapping[str, str]) -> dict[str, OpenAISettings]:
    """provider_ref -> settings for every ``CELL_LLM_<REF>_BASE_URL`` (pure)."""
    out: dict[str, OpenAISettings] = {}
    for key, value in env.items():
        if key.startswith("CELL_LLM_") and key.endswith("_BASE_URL") and value:
            name = key[len("CELL_LLM_") : -len("_BASE_URL")]
            ref = name.lower().replace("_", "-")
            out[ref] = OpenAISettings(
                base_url=value,
                api_key=env.get(f"CELL_LLM_{name}_API_KEY") or None,
                default_model=env.get(f"CELL_LLM_{name}_MODEL") or None,
            )
    return out


def sip_registry(env: Mapping[str, str]) -> ProviderRegistry:
    mock = mock_registry()
    asr: dict[str, ASRProvider] = {**mock.asr, POCKETSPHINX: PocketsphinxASR()}
    tts: dict[str, TTSProvider] = {**mock.tts, ESPEAK: EspeakTTS()}
    llm: dict[str, LLMProvider] = dict(mock.llm)
    for ref, settings in llm_settings(env).items():
        llm[ref] = OpenAIChatLLM(settings)
    return ProviderRegistry(asr=asr, llm=llm, tts=tts)


def sip_driver(env: Mapping[str, str] | None = None) -> tuple[SipDriver, ProviderRegistry]:
    env = os.environ if env is None else env
    path = env.get("CELL_SIP_CREDENTIALS")
    try:
        credentials = load_credentials(Path(path) if path else None)
        rtp_timeout_ms = int(env.get("CELL_RTP_TIMEOUT_MS", "10000"))
    except (SipConfigError, ValueError) as exc:
        raise CellConfigError(str(exc)) from None
    providers = sip_registry(env)
    driver = SipDriver(
        providers,
        credentials,
        bind_host=env.get("CELL_SIP_BIND_HOST", "127.0.0.1"),
        advertised_host=env.get("CELL_SIP_ADVERTISED_HOST") or None,
        rtp_timeout_ms=rtp_timeout_ms,
    )
    return driver, providers
