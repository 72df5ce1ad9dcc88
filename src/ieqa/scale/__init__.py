"""Scale-out on existing engines: Ray Data batch scoring (:mod:`ieqa.scale.raydata`).

Ray Serve serving lives in :mod:`ieqa.serve.rayserve`. Both need the ``ray`` extra
(``pip install 'ieqa[ray]'``); importing this package does not import Ray.
"""
