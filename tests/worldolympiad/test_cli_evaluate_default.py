"""`evaluate-model` with no arguments evaluates the embedded Inferix model on smoke."""

from worldolympiad.cli.evaluate import DEFAULT_MODEL, DEFAULT_SUITE, build_parser


def test_default_is_the_embedded_inferix_model_on_smoke():
    args = build_parser().parse_args([])
    assert (args.model, args.suite) == (DEFAULT_MODEL, DEFAULT_SUITE) == ("inferix:reference-world", "smoke")


def test_the_default_model_resolves_to_shipped_weights_not_random_ones():
    import torch

    from inferix.registry import REFERENCE_WORLD_DIR, load_model

    weights = list(REFERENCE_WORLD_DIR.rglob("*.safetensors"))  # the main DiT and any experts, together
    assert weights and sum(w.stat().st_size for w in weights) <= 20 * 2**20
    trained = load_model("reference-world")
    random = load_model("reference-world-random")
    a = dict(trained.model.named_parameters())
    b = dict(random.model.named_parameters())
    assert a.keys() == b.keys()
    assert any(not torch.equal(a[k], b[k]) for k in a)
