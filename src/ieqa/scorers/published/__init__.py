"""The released evaluators, each beside its release loader, as their authors run them.

Heads read from a released checkpoint (:class:`~ieqa.scorers.published.base.ReleasedHead`):

* editreward — EditReward's reward models (loader: :mod:`.editreward_release`)
* reasonedit, re_reward — ReasonEdit's quality head and RE-Reward (LoRA + head:
  :mod:`.lora_release`)
* edithf — EditHF's three InternVL LoRA scorers (:mod:`.internvl_release`,
  :mod:`.lora_release`)

Judges that generate an answer from their authors' prompt files
(:class:`~ieqa.scorers.published.base.PublishedPrompts`; the API judges of editor
benchmarks share :class:`~ieqa.scorers.published.base.PublishedJudge`):

* viescore, editscore, unifiedreward — VIEScore-style SC/PQ judges
  (:class:`~ieqa.scorers.published.vie_judge.VieJudge`)
* gedit_judge, imgedit_judge, kris_judge, rise_judge — the editor benchmarks' official
  judges

Build them with :func:`ieqa.create_scorer` (``ieqa list scorers``); importing this package
imports none of them.
"""
