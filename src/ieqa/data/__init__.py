"""Data model, manifests, safe image loading, loaders and the ShapesEdit world."""

from ieqa.data.dimensions import (
    CORE_DIMENSIONS,
    canonical_dimension,
    dimension_aliases,
    list_dimensions,
    register_dimension,
)
from ieqa.data.images import (
    DEFAULT_MAX_PIXELS,
    LoadResult,
    image_size,
    iter_load_images,
    load_image,
    load_images,
)
from ieqa.data.schema import (
    BBox,
    EditSample,
    Group,
    ImageRef,
    InstructionKind,
    Preference,
    PreferenceLabel,
    Rating,
    group_samples,
)

__all__ = [
    "DEFAULT_MAX_PIXELS", "LoadResult", "image_size", "iter_load_images", "load_image", "load_images",
    "BBox", "CORE_DIMENSIONS", "EditSample", "Group", "ImageRef", "InstructionKind",
    "Preference", "PreferenceLabel", "Rating", "canonical_dimension", "dimension_aliases",
    "group_samples", "list_dimensions", "register_dimension",
]
