console.log('demo pending');
