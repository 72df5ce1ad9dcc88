"""Candidate generation on a Ray cluster: ``ieqa generate --engine ray``.

The run of :func:`ieqa.curate.generate.generate_candidates` (inputs, layout, seeds,
``candidates.jsonl``, ``generate.json``, resume) with its candidates made by a pool of
Ray actors instead of one pipeline in this process:

* the driver plans the candidates still missing (the local engine's plan), one job per
  candidate, and hands them to Ray Data (``from_items``);
* ``map_batches`` runs them on an ``ActorPoolStrategy(size=replicas)`` pool; each actor
  loads the diffusers pipeline once (from its hub id or folder: a pipeline is never
  pickled from the driver), with ``num_gpus`` / ``num_cpus`` per actor, and writes every
  image atomically where the local engine would (:func:`ieqa.curate.generate.make_candidate`,
  the same code, seeded the same way), so the same seeds give the same files;
* a killed run keeps every image already written; the same command, with either engine,
  makes only the rest.

The images are written by the actors: on a multi-node cluster the output folder (and the
inputs) must be on storage every node sees at the same path.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Mapping
from typing import Any

from ieqa.curate.generate import CandidateJob, GenerateError, load_pipeline, make_candidate
from ieqa.errors import IeqaError
from ieqa.ray_cluster import start_ray
from ieqa.scale.raydata import RayScoring, _ray, _unwrap

__all__ = ["ray_executor"]


class _GeneratorActor:
    """The Ray Data callable class: one pipeline per actor, jobs in, written targets out."""

    def __init__(self, pipeline: str, device: str, dtype: str | None, revision: str | None,
                 steps: int, call_options: dict[str, Any]) -> None:
        self.pipe = load_pipeline(pipeline, device, dtype, revision)
        self.device, self.steps, self.call_options = device, steps, call_options

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        done = []
        for blob in batch["job"]:
            job: CandidateJob = pickle.loads(blob)
            make_candidate(self.pipe, job, steps=self.steps, call_options=self.call_options,
                           device=self.device)
            done.append(job.target)
        return {"target": done}


def ray_executor(pipeline: str, *, scaling: RayScoring, device: str, dtype: str | None = None,
                 revision: str | None = None, steps: int = 50,
                 call_options: Mapping[str, Any] | None = None, batch_size: int = 1
                 ) -> Callable[[list[CandidateJob], Callable[[int], None]], None]:
    """An ``executor`` for :func:`~ieqa.curate.generate.generate_candidates` that makes the
    candidates on Ray (module docstring).

    Args:
        pipeline: hub id or folder of the diffusers pipeline (loaded in each actor).
        scaling: actors, resources per actor and the cluster address
            (:class:`ieqa.scale.raydata.RayScoring`; ``address=None`` starts a local Ray).
        device: where each actor runs its pipeline (``cuda`` with GPUs per replica).
        batch_size: candidates per actor call.
    """
    if not isinstance(pipeline, str):
        raise GenerateError("--engine ray loads the pipeline in every actor: give a hub id or "
                            "a folder written by save_pretrained, not a pipeline object")
    if scaling.gpus_per_replica > 0 and device == "cpu":
        raise GenerateError("--gpus-per-replica reserves GPUs for each actor, but the pipeline "
                            "would run on the CPU: add --device cuda")
    if batch_size < 1:
        raise GenerateError(f"batch_size must be >= 1, got {batch_size}")
    options = dict(call_options or {})

    def run(jobs: list[CandidateJob], advance: Callable[[int], None]) -> None:
        ray = _ray()
        started = start_ray(scaling.address, num_gpus=scaling.gpus_per_replica,
                            num_cpus=scaling.cpus_per_replica, include_dashboard=False,
                            logging_level=logging.WARNING, log_to_driver=True)
        try:
            context = ray.data.DataContext.get_current()
            context.enable_progress_bars = False  # ieqa draws its own
            context.print_on_execution_start = False
            dataset = ray.data.from_items([{"job": pickle.dumps(j)} for j in jobs],
                                          override_num_blocks=max(1, min(len(jobs),
                                                                         4 * scaling.replicas)))
            dataset = dataset.map_batches(
                _GeneratorActor, batch_size=batch_size, batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=min(scaling.replicas, len(jobs))),
                fn_constructor_kwargs={"pipeline": pipeline, "device": device, "dtype": dtype,
                                       "revision": revision, "steps": steps,
                                       "call_options": options},
                num_cpus=scaling.cpus_per_replica, num_gpus=scaling.gpus_per_replica)
            try:
                for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
                    advance(len(batch["target"]))
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # noqa: BLE001 - Ray wraps the actors' errors
                cause = _unwrap(exc)
                if isinstance(cause, IeqaError):
                    raise cause from None
                raise GenerateError(
                    f"the Ray run stopped ({type(cause).__name__}: {cause}); the images written "
                    "so far are kept: run the same command again to make the rest") from exc
        finally:
            if started:
                ray.shutdown()

    return run
