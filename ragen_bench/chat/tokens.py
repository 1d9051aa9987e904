"""The token layout of a chat episode: the one place that turns messages into training ids.

Every user of token ids calls this module and none re-derives it: the policy agent (the
trainer's sampler), the SFT data's rows, :meth:`~ragen_bench.chat.Trajectory.tokenize` and the
veRL agent loop.  The layout (docs/starpo.md, "How the multi-turn context is formed"):

* turn 1's prompt is the chat template's rendering of the messages before the first reply,
  with the generation prompt (:meth:`TokenLayout.prompt_ids`): exactly what the ``hf`` agent
  and the eval harness send;
* then each reply's ids, closed by the end-of-turn id (the tokenizer's ``eos_token_id``);
* between two replies, the *bridge* (:meth:`TokenLayout.bridge_ids`): the template text that
  follows a reply's end-of-turn token, through the next generation prompt;
* a row ends on its last reply's end-of-turn id (the template's layout after it, and any
  message after the last reply, carry nothing a model writes).

The loss mask (:meth:`TokenLayout.record_ids`) is true on each reply and its end-of-turn id.
Text is encoded without added special tokens (the template places them).  A template must be
prefix-stable (adding a message leaves the text of earlier ones alone) and must close a reply
with the end-of-turn token; otherwise :class:`TokenLayoutError` is raised.
"""

from __future__ import annotations

from typing import Any


class TokenLayoutError(ValueError):
    """The chat template cannot be laid out as one growing token context."""


class TokenLayout:
    """The token layout for one tokenizer (see the module docstring)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.end_id = tokenizer.eos_token_id

    def render(self, messages: list[dict[str, str]], *, generation_prompt: bool = True) -> str:
        """The chat template's text for ``messages`` (what the ``hf`` agent sends at turn 1)."""
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=False)

    def encode(self, text: str) -> list[int]:
        # The chat template already places the special tokens the model expects.
        return self.tokenizer.encode(text, add_special_tokens=False)

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Turn 1's prompt: the rendering of ``messages`` with the generation prompt."""
        return self.encode(self.render(messages))

    def bridge_ids(self, messages: list[dict[str, str]], *, ended: bool, reply: int | None = None) -> list[int]:
        """Ids of the template text after reply ``reply``: its closing, the messages after it, the generation prompt.

        ``messages`` runs through the message before the next reply; ``reply`` (default: the
        second to last message, one user message after the reply) indexes the reply.  With
        ``ended`` the reply's own ids already hold its end-of-turn id, so the bridge starts
        after it; otherwise the bridge holds the template's closing text too.
        """
        reply = len(messages) - 2 if reply is None else reply
        content = messages[reply]["content"]
        before = self.render(messages[:reply])
        through = self.render(messages[: reply + 1], generation_prompt=False)
        whole = self.render(messages)
        reply_end = len(before) + len(content)
        if through[:reply_end] != before + content or not whole.startswith(through):
            raise TokenLayoutError(
                "the chat template is not prefix-stable (adding a message "
                "changed the text of earlier ones), so a token context cannot be extended"
            )
        text = through[reply_end:] + whole[len(through) :]
        if ended:
            end_text = self.tokenizer.decode([self.end_id])
            if not text.startswith(end_text):
                raise TokenLayoutError(
                    f"the chat template does not close a reply with the end-of-turn token {end_text!r}"
                )
            text = text[len(end_text) :]
        return self.encode(text)

    def record_ids(self, messages: list[dict[str, str]]) -> tuple[list[int], list[bool]]:
        """A finished conversation's ids and loss mask: every reply re-encoded and closed by the end-of-turn id.

        The row the policy agent builds when each reply's sampled ids are the encoding of its
        text and end on the end-of-turn id.  Messages after the last reply are ignored.
        """
        replies = [index for index, message in enumerate(messages) if message["role"] == "assistant"]
        if not replies:
            raise TokenLayoutError("no assistant message, so nothing to lay out as a reply")
        ids = self.prompt_ids(messages[: replies[0]])
        mask = [False] * len(ids)
        for index, following in zip(replies, [*replies[1:], None]):
            reply = [*self.encode(messages[index]["content"]), self.end_id]
            ids += reply
            mask += [True] * len(reply)
            if following is not None:
                bridge = self.bridge_ids(messages[:following], ended=True, reply=index)
                ids += bridge
                mask += [False] * len(bridge)
        return ids, mask
