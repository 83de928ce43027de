export CLAUDE_CODE_URL="http://127.0.0.1:${port:http}"
alias cc-logs='journalctl -u claude-code.service -f'
