"""The coordinators, pure: the shared runtime, groups, transactions, their persistence."""

# The repository's top-level `coordinator` is a link to this folder, kept so the top level shows the
# layout the project was specified with. It is for reading only: importing through it would load every
# module a second time under another name (`ErrorCode.X is ErrorCode.X` failing between the two),
# so it refuses.
if __name__ != "kcoord.coordinator":
    raise ImportError(f"{__name__!r} is the link to kcoord/coordinator: import kcoord.coordinator")
