"""The studio's routes, by concern, as FastAPI routers (each module's ``router``) that
:func:`ieqa.studio.app.create_app` assembles: :mod:`.public` (health, favicon, the index,
the invite links), :mod:`.rater` (a rater's home, guidelines and way through the list),
:mod:`.tasks` (a task's form: shown, answered, skipped, revised, training feedback),
:mod:`.media` (item and guideline images), :mod:`.admin` (the admin page and the
organiser's actions) and :mod:`.exports` (the answer downloads). Each route reaches its
app's :class:`~ieqa.studio.state.StudioState` through :func:`ieqa.studio.state.studio`."""
