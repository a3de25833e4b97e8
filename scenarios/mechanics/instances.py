"""One instance per mechanics generator: the registry's lazy ``module:attr`` targets."""

from scenarios.mechanics import scenes

FREE_FALL = scenes.FreeFall()
PROJECTILE = scenes.Projectile()
BOUNCE = scenes.Bounce()
COLLISION = scenes.Collision()
SLIDING = scenes.Sliding()
BUOYANCY = scenes.Buoyancy()
STACKING = scenes.Stacking()
