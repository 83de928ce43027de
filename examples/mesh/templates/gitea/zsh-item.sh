export GITEA_URL="${access:forge}"
alias forge='xdg-open "$GITEA_URL" 2>/dev/null || echo "$GITEA_URL"'
