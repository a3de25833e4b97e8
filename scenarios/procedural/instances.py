"""One instance per procedural generator: the registry's lazy ``module:attr`` targets."""

from scenarios.procedural import material, thermal

MELTING = thermal.Melting()
FREEZING = thermal.Freezing()
VAPORIZATION = thermal.Vaporization()
CONDENSATION = thermal.Condensation()
SUBLIMATION = thermal.Sublimation()
DEPOSITION = thermal.Deposition()
COLOR_MIXING = material.ColorMixing()
DISSOLVING = material.Dissolving()
HARDNESS = material.Hardness()
COMBUSTION = material.Combustion()
