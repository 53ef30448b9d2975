"""Build the SIP-mode cell from environment variables (see docs/cell-sip.md).

=============================  ===============================================
CELL_SIP_CREDENTIALS           JSON file {trunk_id: {username, password}}
CELL_SIP_BIND_HOST             local address of SIP and RTP sockets (127.0.0.1)
CELL_SIP_ADVERTISED_HOST       address written in Via/Contact/SDP (behind NAT)
CELL_RTP_TIMEOUT_MS            no RTP for this long ends the call (10000)
CELL_LLM_<REF>_BASE_URL        an OpenAI-compatible LLM offered as provider_ref
CELL_LLM_<REF>_API_KEY         <ref> (lower case, ``_`` -> ``-``), its key
CELL_LLM_<REF>_MODEL           and its default model
CELL_VAD                       ``webrtc`` (default) or ``energy``
CELL_END_OF_UTTERANCE_MS       silence that ends an utterance (500)
CELL_PREEMPTIVE_GENERATION     ``0``: no reply is written before the end of the turn (on)
CELL_AMD                       default of calls whose plan has no ``amd``: ``off``
                               (default), ``hangup``, ``leave_message``
CELL_DTMF_OPT_OUT_DIGITS       keys that opt the callee out, e.g. ``9`` (none)
CELL_INBAND_DTMF               ``0`` turns off in-band tone detection (on)
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
from agentcall.cell.domain.errors import CellConfigError, SipConfigError
from agentcall.cell.domain.model import AmdAction
from agentcall.cell.media.hearing import END_OF_UTTERANCE_MS, VoiceOptions
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


DTMF_KEYS = frozenset("0123456789*#ABCD")


def voice_options(env: Mapping[str, str]) -> tuple[VoiceOptions, str]:
    """The cell's voice settings and VAD kind from the environment (pure); raises
    CellConfigError naming the variable."""
    amd = env.get("CELL_AMD", "off") or "off"
    try:
        action = AmdAction(amd)
    except ValueError:
        raise CellConfigError(
            f"CELL_AMD={amd!r}: use off, hangup or leave_message (the default of calls"
            " whose plan has no amd)"
        ) from None
    digits = frozenset(env.get("CELL_DTMF_OPT_OUT_DIGITS", "").replace(",", "").upper())
    if not digits <= DTMF_KEYS:
        raise CellConfigError("CELL_DTMF_OPT_OUT_DIGITS: keys are 0-9, *, #, A-D")
    vad = env.get("CELL_VAD", "webrtc") or "webrtc"
    if vad not in ("webrtc", "energy"):
        raise CellConfigError(f"CELL_VAD={vad!r}: use webrtc or energy")
    eou = env.get("CELL_END_OF_UTTERANCE_MS", str(END_OF_UTTERANCE_MS))
    if not eou.isdigit() or not 100 <= int(eou) <= 5000:
        raise CellConfigError("CELL_END_OF_UTTERANCE_MS: a number of ms from 100 to 5000")
    options = VoiceOptions(
        amd=action,
        opt_out_digits=digits,
        end_of_utterance_ms=int(eou),
        inband_dtmf=env.get("CELL_INBAND_DTMF", "1") != "0",
        preemptive=env.get("CELL_PREEMPTIVE_GENERATION", "1") != "0",
    )
    return options, vad


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
    voice, vad = voice_options(env)
    driver = SipDriver(
        providers,
        credentials,
        bind_host=env.get("CELL_SIP_BIND_HOST", "127.0.0.1"),
        advertised_host=env.get("CELL_SIP_ADVERTISED_HOST") or None,
        rtp_timeout_ms=rtp_timeout_ms,
        voice=voice,
        vad=vad,
    )
    return driver, providers
