# Written by the mesh provisioner (module zsh on ${machine:name}); edits are put back.
# Each module on this node that contributes to shell:zsh:normal has its part below.
${shell:zsh:normal}
